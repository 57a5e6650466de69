#include "js_wake.h"

#include <uv.h>

#include "event_batch_js.h"

namespace rvma::addon {

class JsWake {
 public:
  uv_async_t async;
  uv_poll_t poll;
  bool polling = false;
  int open = 0;  // handles not yet closed
  std::weak_ptr<Engine> engine;
  napi_env env = nullptr;
  napi_ref onEvents = nullptr;
  napi_async_context context = nullptr;

  void deliver() {
    auto e = engine.lock();
    if (!e) return;
    if (polling) e->poll();
    EventBatch batch = e->drain();
    if (batch.events.empty()) return;
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    napi_value fn, recv, args[2];
    napi_get_reference_value(env, onEvents, &fn);
    napi_get_global(env, &recv);  // make_callback needs an object receiver
    eventBatchArgs(env, batch, args);
    // make_callback, not call_function: it runs the microtasks (promise reactions) after.
    napi_make_callback(env, context, recv, fn, 2, args, nullptr);
    napi_close_handle_scope(env, scope);
  }
};

namespace {

void onClosed(uv_handle_t* handle) {
  auto* w = static_cast<JsWake*>(handle->data);
  if (--w->open == 0) delete w;
}

}  // namespace

JsWake* startJsWake(Napi::Env env, const std::shared_ptr<Engine>& engine, Napi::Function onEvents, bool pollProgress) {
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) return nullptr;
  auto* w = new JsWake();
  w->engine = engine;
  w->env = env;
  if (uv_async_init(loop, &w->async, [](uv_async_t* a) { static_cast<JsWake*>(a->data)->deliver(); }) != 0) {
    delete w;
    return nullptr;
  }
  w->async.data = w;
  w->open = 1;
  uv_unref(reinterpret_cast<uv_handle_t*>(&w->async));
  if (pollProgress && uv_poll_init(loop, &w->poll, engine->progressFd()) == 0) {
    w->poll.data = w;
    w->open++;
    w->polling = true;
    uv_poll_start(&w->poll, UV_READABLE, [](uv_poll_t* p, int, int) { static_cast<JsWake*>(p->data)->deliver(); });
    uv_unref(reinterpret_cast<uv_handle_t*>(&w->poll));
  }
  napi_create_reference(env, onEvents, 1, &w->onEvents);
  napi_async_init(env, nullptr, Napi::String::New(env, "rvma.events"), &w->context);
  return w;
}

void signalJsWake(JsWake* w) { uv_async_send(&w->async); }

void refJsWake(JsWake* w, bool on) {
  auto apply = [on](uv_handle_t* h) { on ? uv_ref(h) : uv_unref(h); };
  apply(reinterpret_cast<uv_handle_t*>(&w->async));
  if (w->polling) apply(reinterpret_cast<uv_handle_t*>(&w->poll));
}

void stopJsWake(JsWake* w) {
  w->engine.reset();
  napi_delete_reference(w->env, w->onEvents);
  napi_async_destroy(w->env, w->context);
  if (w->polling) {
    uv_poll_stop(&w->poll);
    uv_close(reinterpret_cast<uv_handle_t*>(&w->poll), onClosed);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&w->async), onClosed);
}

}  // namespace rvma::addon
