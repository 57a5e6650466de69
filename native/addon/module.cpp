// Addon entry: the NativeEndpoint class and a few free functions.
#include <malloc.h>
#include <napi.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "capabilities.h"
#include "convert.h"
#include "endpoint_wrap.h"

namespace rvma::addon {
namespace {

// allocBuffer(size) -> ArrayBuffer of zeroed, page-aligned native memory (registrable by
// RDMA providers), freed when JS lets go of it.
Napi::Value AllocBuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) return typeError(env, "allocBuffer(size)");
  double requested = info[0].As<Napi::Number>().DoubleValue();
  if (!(requested >= 0) || requested > double(1ull << 40)) return typeError(env, "allocBuffer: size out of range");
  size_t size = size_t(requested);
  void* mem = nullptr;
  // Large buffers on 2 MiB boundaries, as transparent huge pages where the kernel leaves that to
  // us (THP "madvise"): copies into a 16 MiB buffer of 4 KiB pages ran at a third of the speed
  // (3.5 against 11 GB/s here), from TLB misses.
  const size_t huge = size_t(2) << 20;
  if (posix_memalign(&mem, size >= huge ? huge : 4096, size ? size : 1) != 0) {
    Napi::Error::New(env, "out of memory allocating a buffer").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (size >= huge) madvise(mem, size, MADV_HUGEPAGE);
  std::memset(mem, 0, size);
  Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(size));
  return Napi::ArrayBuffer::New(
      env, mem, size,
      [](Napi::Env env, void* data, size_t* hint) {
        Napi::MemoryManagement::AdjustExternalMemory(env, -int64_t(*hint));
        delete hint;
        std::free(data);
      },
      new size_t(size));
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
  exports.Set("capabilities", Napi::Function::New<Capabilities>(env, "capabilities"));
  exports.Set("heapBytes", Napi::Function::New<HeapBytes>(env, "heapBytes"));
  return exports;
}

}  // namespace rvma::addon

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return rvma::addon::Init(env, exports); }

NODE_API_MODULE(rvma, InitModule)
