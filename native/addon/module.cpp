// Addon entry: the NativeEndpoint class and a few free functions.
#include <malloc.h>
#include <napi.h>

#include <string>

#include "../core/arena.h"
#include "buffer_pool.h"
#include "capabilities.h"
#include "convert.h"
#include "endpoint_wrap.h"

namespace rvma::addon {
namespace {

// allocBuffer(size, zeroed = true) -> ArrayBuffer of page-aligned native memory (registrable by
// RDMA providers), back to the buffer pool when JS lets go of it. Not zeroed: memory a transfer
// overwrites whole (it may hold bytes of this process's earlier buffers).
Napi::Value AllocBuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) return typeError(env, "allocBuffer(size)");
  double requested = info[0].As<Napi::Number>().DoubleValue();
  if (!(requested >= 0) || requested > double(1ull << 40)) return typeError(env, "allocBuffer: size out of range");
  size_t size = size_t(requested);
  const bool zeroed = info.Length() < 2 || !info[1].IsBoolean() || info[1].As<Napi::Boolean>().Value();
  void* mem = BufferPool::shared().take(size, zeroed);
  if (!mem) {
    Napi::Error::New(env, "out of memory allocating a buffer").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  // V8 is told of the memory while JS reaches it, so that collections keep pace with buffers
  // dropped; what the pool holds afterwards is the pool's, and collecting frees none of it.
  Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(size));
  return Napi::ArrayBuffer::New(
      env, mem, size,
      [](Napi::Env env, void* data, size_t* hint) {
        Napi::MemoryManagement::AdjustExternalMemory(env, -int64_t(*hint));
        BufferPool::shared().give(data, *hint);
        delete hint;
      },
      new size_t(size));
}

// The optional byte limit of bufferPool(limit?) and arena(limit?), given to `set`; false (a
// TypeError thrown) when it is not a byte count.
template <typename Set>
bool takeLimit(const Napi::CallbackInfo& info, const char* name, Set set) {
  if (info.Length() == 0 || info[0].IsUndefined()) return true;
  const double limit = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(limit >= 0) || limit > double(1ull << 50)) {
    typeError(info.Env(), (std::string(name) + ": the limit must be a byte count").c_str());
    return false;
  }
  set(uint64_t(limit));
  return true;
}

// bufferPool(limit?) -> { pooledBytes, limitBytes, reused, fresh, returned }; a limit given is set first.
Napi::Value BufferPoolInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!takeLimit(info, "bufferPool", [](uint64_t limit) { BufferPool::shared().setLimit(limit); })) return env.Undefined();
  BufferPoolStats s = BufferPool::shared().stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("pooledBytes", double(s.pooledBytes));
  out.Set("limitBytes", double(s.limitBytes));
  out.Set("reused", double(s.reused));
  out.Set("fresh", double(s.fresh));
  out.Set("returned", double(s.returned));
  return out;
}

// arena(limit?) -> { usedBytes, limitBytes, spanBytes } of the shared arena (core/arena.h); a
// limit given is set first.
Napi::Value ArenaInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!takeLimit(info, "arena", [](uint64_t limit) { Arena::shared().setLimit(limit); })) return env.Undefined();
  ArenaStats s = Arena::shared().stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("usedBytes", double(s.usedBytes));
  out.Set("limitBytes", double(s.limitBytes));
  out.Set("spanBytes", double(s.spanBytes));
  return out;
}

// Bytes currently allocated with malloc in this process (diagnostics for memory tests).
Napi::Value HeapBytes(const Napi::CallbackInfo& info) {
  struct mallinfo2 mi = mallinfo2();
  return Napi::Number::New(info.Env(), double(mi.uordblks + mi.hblkhd));
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeEndpoint", EndpointWrap::Define(env));
  exports.Set("allocBuffer", Napi::Function::New<AllocBuffer>(env, "allocBuffer"));
  exports.Set("bufferPool", Napi::Function::New<BufferPoolInfo>(env, "bufferPool"));
  exports.Set("arena", Napi::Function::New<ArenaInfo>(env, "arena"));
  exports.Set("capabilities", Napi::Function::New<Capabilities>(env, "capabilities"));
  exports.Set("heapBytes", Napi::Function::New<HeapBytes>(env, "heapBytes"));
  return exports;
}

}  // namespace rvma::addon

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return rvma::addon::Init(env, exports); }

NODE_API_MODULE(rvma, InitModule)
