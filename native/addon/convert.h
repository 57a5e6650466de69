// Argument conversions for the bindings. The TS layer has already validated every argument;
// these only guard against misuse of the private addon API.
#pragma once
#include <napi.h>

#include <cstdint>

namespace rvma::addon {

inline bool toU64(const Napi::Value& v, uint64_t* out) {
  if (!v.IsBigInt()) return false;
  bool lossless = false;
  *out = v.As<Napi::BigInt>().Uint64Value(&lossless);
  return lossless;
}

inline size_t elementBytes(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      return 1;
    case napi_int16_array:
    case napi_uint16_array:
      return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
      return 4;
    default:  // float64, bigint64, biguint64
      return 8;
  }
}

// Any ArrayBufferView or ArrayBuffer, as a byte range. A typed array (the common case: every
// put and post) costs two N-API calls: its info already carries the offset-adjusted pointer.
inline bool toBytes(const Napi::Value& v, uint8_t** data, size_t* len) {
  napi_env env = v.Env();
  bool typed = false;
  if (napi_is_typedarray(env, v, &typed) == napi_ok && typed) {
    napi_typedarray_type type;
    size_t length = 0;
    void* p = nullptr;
    if (napi_get_typedarray_info(env, v, &type, &length, &p, nullptr, nullptr) != napi_ok) return false;
    *data = static_cast<uint8_t*>(p);
    *len = length * elementBytes(type);
    return true;
  }
  if (v.IsDataView()) {
    auto dv = v.As<Napi::DataView>();
    *data = static_cast<uint8_t*>(dv.ArrayBuffer().Data()) + dv.ByteOffset();
    *len = dv.ByteLength();
    return true;
  }
  if (v.IsArrayBuffer()) {
    auto ab = v.As<Napi::ArrayBuffer>();
    *data = static_cast<uint8_t*>(ab.Data());
    *len = ab.ByteLength();
    return true;
  }
  return false;
}

inline Napi::Value typeError(const Napi::Env& env, const char* message) {
  Napi::TypeError::New(env, message).ThrowAsJavaScriptException();
  return env.Undefined();
}

}  // namespace rvma::addon
