#include "event_batch_js.h"

#include <cstring>

namespace rvma::addon {

// Doubles, not BigInts: every field JS reads fits in 53 bits (64-bit values such as
// incarnations travel as texts), and reading doubles costs JS no BigInt conversions.
void eventBatchArgs(napi_env env, const EventBatch& batch, napi_value args[2]) {
  Napi::Env e(env);
  size_t words = batch.events.size() * Event::kWords;
  auto buffer = Napi::ArrayBuffer::New(e, words * sizeof(double));
  auto* out = static_cast<double*>(buffer.Data());
  const auto* in = reinterpret_cast<const uint64_t*>(batch.events.data());
  for (size_t i = 0; i < words; i++) out[i] = double(in[i]);
  napi_create_typedarray(env, napi_float64_array, words, buffer, 0, &args[0]);
  Napi::Array texts = Napi::Array::New(e, batch.texts.size());
  for (size_t i = 0; i < batch.texts.size(); i++) texts.Set(uint32_t(i), Napi::String::New(e, batch.texts[i]));
  args[1] = texts;
}

}  // namespace rvma::addon
