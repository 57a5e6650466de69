#include "event_batch_js.h"

namespace rvma::addon {
namespace {

napi_value newArray(napi_env env, size_t words, double** data) {
  napi_value buffer, array;
  void* raw = nullptr;
  napi_create_arraybuffer(env, words * sizeof(double), &raw, &buffer);
  napi_create_typedarray(env, napi_float64_array, words, buffer, 0, &array);
  *data = static_cast<double*>(raw);
  return array;
}

}  // namespace

void EventArray::release(napi_env env) {
  if (array_) napi_delete_reference(env, array_);
  array_ = nullptr;
  data_ = nullptr;
}

// Doubles, not BigInts: every field JS reads fits in 53 bits (64-bit values such as
// incarnations travel as texts), and reading doubles costs JS no BigInt conversions.
bool EventArray::args(napi_env env, const EventBatch& batch, napi_value out[3]) {
  size_t words = batch.events.size() * Event::kWords;
  double* data;
  bool reused = !busy_ && words <= kWords;
  if (!reused) {
    out[0] = newArray(env, words, &data);
  } else {
    if (!array_) napi_create_reference(env, newArray(env, kWords, &data_), 1, &array_);
    napi_get_reference_value(env, array_, &out[0]);
    data = data_;
    busy_ = true;
  }
  const auto* in = reinterpret_cast<const uint64_t*>(batch.events.data());
  for (size_t i = 0; i < words; i++) data[i] = double(in[i]);
  napi_create_uint32(env, uint32_t(words), &out[1]);
  if (batch.texts.empty()) {
    napi_get_undefined(env, &out[2]);
    return reused;
  }
  napi_create_array_with_length(env, batch.texts.size(), &out[2]);
  for (size_t i = 0; i < batch.texts.size(); i++) {
    napi_value text;
    napi_create_string_utf8(env, batch.texts[i].data(), batch.texts[i].size(), &text);
    napi_set_element(env, out[2], uint32_t(i), text);
  }
  return reused;
}

}  // namespace rvma::addon
