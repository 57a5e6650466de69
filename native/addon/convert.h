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

// Any ArrayBufferView or ArrayBuffer, as a byte range.
inline bool toBytes(const Napi::Value& v, uint8_t** data, size_t* len) {
  if (v.IsTypedArray()) {
    auto ta = v.As<Napi::TypedArray>();
    *data = static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
    *len = ta.ByteLength();
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
