#include "event_batch_js.h"

#include <cstring>

namespace rvma::addon {

void eventBatchArgs(napi_env env, const EventBatch& batch, napi_value args[2]) {
  Napi::Env e(env);
  size_t words = batch.events.size() * Event::kWords;
  auto buffer = Napi::ArrayBuffer::New(e, words * sizeof(uint64_t));
  std::memcpy(buffer.Data(), batch.events.data(), words * sizeof(uint64_t));
  napi_create_typedarray(env, napi_biguint64_array, words, buffer, 0, &args[0]);
  Napi::Array texts = Napi::Array::New(e, batch.texts.size());
  for (size_t i = 0; i < batch.texts.size(); i++) texts.Set(uint32_t(i), Napi::String::New(e, batch.texts[i]));
  args[1] = texts;
}

}  // namespace rvma::addon
