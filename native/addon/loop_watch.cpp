#include "loop_watch.h"

#ifdef RVMA_HAVE_UV
#include <uv.h>

namespace rvma::addon {
namespace {

struct Watch {
  uv_poll_t poll;
  std::weak_ptr<Engine> engine;
};

void onReadable(uv_poll_t* handle, int status, int events) {
  auto* watch = static_cast<Watch*>(handle->data);
  if (auto engine = watch->engine.lock()) engine->poll();
}

}  // namespace

LoopWatch* LoopWatch::start(Napi::Env env, const std::shared_ptr<Engine>& engine) {
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) return nullptr;
  auto* watch = new Watch{{}, engine};
  watch->poll.data = watch;
  if (uv_poll_init(loop, &watch->poll, engine->progressFd()) != 0) {
    delete watch;
    return nullptr;
  }
  uv_poll_start(&watch->poll, UV_READABLE, onReadable);
  uv_unref(reinterpret_cast<uv_handle_t*>(&watch->poll));
  return reinterpret_cast<LoopWatch*>(watch);
}

void LoopWatch::ref(LoopWatch* w, bool on) {
  auto* handle = reinterpret_cast<uv_handle_t*>(&reinterpret_cast<Watch*>(w)->poll);
  if (on) uv_ref(handle); else uv_unref(handle);
}

void LoopWatch::stop(LoopWatch* w) {
  auto* watch = reinterpret_cast<Watch*>(w);
  uv_poll_stop(&watch->poll);
  uv_close(reinterpret_cast<uv_handle_t*>(&watch->poll),
           [](uv_handle_t* handle) { delete static_cast<Watch*>(handle->data); });
}

}  // namespace rvma::addon

#else

namespace rvma::addon {
LoopWatch* LoopWatch::start(Napi::Env, const std::shared_ptr<Engine>&) { return nullptr; }
void LoopWatch::ref(LoopWatch*, bool) {}
void LoopWatch::stop(LoopWatch*) {}
}  // namespace rvma::addon

#endif
