#include "js_wake.h"

#include <sched.h>
#include <sys/epoll.h>
#include <uv.h>

#include <thread>
#include <unordered_map>

#include "event_batch_js.h"

namespace rvma::addon {
namespace {

int uvEventsOf(uint32_t epollEvents) {
  return ((epollEvents & EPOLLIN) ? UV_READABLE : 0) | ((epollEvents & EPOLLOUT) ? UV_WRITABLE : 0);
}

uint32_t epollEventsOf(int status, int uvEvents) {
  if (status < 0) return EPOLLERR | EPOLLIN;  // let the handler's read see the error
  return ((uvEvents & UV_READABLE) ? EPOLLIN : 0u) | ((uvEvents & UV_WRITABLE) ? EPOLLOUT : 0u) |
         ((uvEvents & UV_DISCONNECT) ? EPOLLHUP : 0u);
}

struct FdWatch {
  uv_poll_t poll;
  uint64_t token;
  JsWake* owner;
};

// The JsWake whose prepare callback is running on this thread, if any: JS it delivers may make
// events for another endpoint of the process (a loopback put), whose own callback may have run.
thread_local JsWake* preparing = nullptr;

}  // namespace

class JsWake final : public ExternalPoller {
 public:
  uv_loop_t* loop = nullptr;
  uv_async_t async;
  bool loopProgress = false;
  bool referenced = false;
  int open = 0;  // handles not yet closed
  std::weak_ptr<Engine> engine;
  std::unordered_map<uint64_t, FdWatch*> fds;
  napi_env env = nullptr;
  napi_ref onEvents = nullptr;
  napi_async_context context = nullptr;
  EventArray events;
  // Busy polling in loop mode: while the idle handle runs, the event loop never blocks and
  // polls the providers every round, until spinUntil passes without work.
  uv_idle_t idle;
  bool spinning = false;
  uint64_t spinUntil = 0;
  // Runs before the loop blocks, in loop mode: delivers the events the JS thread made in its own
  // calls (deliverDue), and runs the providers' beforeSleep() when they have one and the loop is
  // not spinning (an shm peer kicks our eventfd only while we sleep). Never keeps the loop alive.
  uv_prepare_t sleepPrepare;
  bool sleepHooks = false;
  // Set instead of signalling the async handle when the JS thread itself made events (e.g. a
  // put that read its peer's acknowledgements): no eventfd write and read, no extra loop turn.
  bool deliverDue = false;
  std::thread::id loopThread;
  // Turns of the event loop in which this endpoint had work once the loop had been free to
  // sleep (a watched fd was ready, or the progress thread signalled): the wake-ups it caused,
  // counted once per turn. turnCounted is cleared just before the loop may block.
  uint64_t wakeups = 0;
  bool turnCounted = false;

  void woke() {
    if (turnCounted) return;
    wakeups++;
    turnCounted = loopProgress;  // thread mode has no prepare hook: every signal is a turn
  }

  bool watch(uint64_t token, int fd, uint32_t epollEvents) override {
    auto* w = new FdWatch{{}, token, this};
    if (uv_poll_init(loop, &w->poll, fd) != 0) {
      delete w;
      return false;
    }
    w->poll.data = w;
    open++;
    fds[token] = w;
    uv_poll_start(&w->poll, uvEventsOf(epollEvents), onReady);
    if (!referenced) uv_unref(reinterpret_cast<uv_handle_t*>(&w->poll));
    return true;
  }

  void change(uint64_t token, uint32_t epollEvents) override {
    auto it = fds.find(token);
    if (it != fds.end()) uv_poll_start(&it->second->poll, uvEventsOf(epollEvents), onReady);
  }

  void unwatch(uint64_t token) override {
    auto it = fds.find(token);
    if (it == fds.end()) return;
    close(it->second);
    fds.erase(it);
  }

  void close(FdWatch* w) {
    uv_poll_stop(&w->poll);
    uv_close(reinterpret_cast<uv_handle_t*>(&w->poll), [](uv_handle_t* h) {
      auto* w = static_cast<FdWatch*>(h->data);
      JsWake* owner = w->owner;
      delete w;
      owner->closed();
    });
  }

  void closed() {
    if (--open == 0) delete this;
  }

  static void onReady(uv_poll_t* p, int status, int events) {
    auto* w = static_cast<FdWatch*>(p->data);
    JsWake* self = w->owner;
    self->woke();
    if (auto e = self->engine.lock()) e->dispatch(w->token, epollEventsOf(status, events));
    self->deliver();
  }

  static void onSleepPrepare(uv_prepare_t* h) {
    JsWake* self = static_cast<JsWake*>(h->data);
    preparing = self;
    self->prepare();
    preparing = nullptr;
    self->turnCounted = false;  // what wakes the loop from here on is a new wake-up
  }

  void prepare() {
    if (!spinning) return settle();
    // A spin ends in onIdle, just before this runs; the loop does not block meanwhile.
    if (!deliverDue) return;
    deliverDue = false;
    deliver();
  }

  // Before the loop sleeps, the providers finish what came in meanwhile (shm: records that a
  // peer wrote without a kick), and JS sees its events (also those its own calls made), until
  // nothing is left. Bounded: then the loop takes one more turn without sleeping, so timers and
  // other fds are not starved.
  void settle() {
    for (int round = 0; round < Progress::kSettleRounds; round++) {
      const bool due = deliverDue;
      deliverDue = false;
      auto e = engine.lock();  // looked up each round: JS may close the endpoint in deliver()
      if (!e) return;
      if (!(sleepHooks && e->beforeSleep()) && !due) return;
      deliver();
    }
    if (engine.expired()) return;  // JS closed the endpoint (and these handles) in deliver()
    spinUntil = 0;  // onIdle: one round, then the prepare phase settles again
    if (!spinning) {
      spinning = true;
      uv_idle_start(&idle, onIdle);
    }
  }

  // Any thread: JS is to see the engine's new events.
  void signal() {
    // Our prepare callback delivers before the loop next blocks, unless another endpoint's is
    // running now: ours may have run already in this turn.
    if (loopProgress && std::this_thread::get_id() == loopThread && (preparing == nullptr || preparing == this)) {
      deliverDue = true;
    } else {
      uv_async_send(&async);
    }
  }

  // Something happened: the reply usually follows within microseconds, so keep polling.
  void spin(const Engine& e) {
    uint32_t us = e.busyPollUs();
    if (!us || !loopProgress) return;
    spinUntil = uv_hrtime() + uint64_t(us) * 1000;
    if (spinning) return;
    spinning = true;
    uv_idle_start(&idle, onIdle);
  }

  static void onIdle(uv_idle_t* h) {
    JsWake* self = static_cast<JsWake*>(h->data);
    auto e = self->engine.lock();
    if (e && e->pollOnce() > 0) {
      self->deliver();  // spins on
    } else if (!e || uv_hrtime() >= self->spinUntil) {
      uv_idle_stop(h);  // the prepare phase, next, settles before the loop sleeps
      self->spinning = false;
    } else {
      sched_yield();  // another process on this CPU may be the one that answers
    }
  }

  void deliver() {
    auto e = engine.lock();
    if (!e) return;
    EventBatch batch = e->drain();
    if (batch.events.empty()) return;
    spin(*e);
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    napi_value fn, recv, args[3];
    napi_get_reference_value(env, onEvents, &fn);
    napi_get_global(env, &recv);  // make_callback needs an object receiver
    bool reused = events.args(env, batch, args);
    // make_callback, not call_function: it runs the microtasks (promise reactions) after.
    napi_status called = napi_make_callback(env, context, recv, fn, 3, args, nullptr);
    events.finished(reused);
    if (called == napi_pending_exception) {
      // A throw out of onEvents is the application's: report it as uncaught, like Node does.
      napi_value error;
      napi_get_and_clear_last_exception(env, &error);
      napi_fatal_exception(env, error);
    }
    napi_close_handle_scope(env, scope);
  }

  void ref(bool on) {
    referenced = on;
    auto apply = [on](uv_handle_t* h) { on ? uv_ref(h) : uv_unref(h); };
    apply(reinterpret_cast<uv_handle_t*>(&async));
    for (auto& [token, w] : fds) apply(reinterpret_cast<uv_handle_t*>(&w->poll));
  }
};

JsWake* startJsWake(Napi::Env env, Napi::Function onEvents, bool loopProgress) {
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) return nullptr;
  auto* w = new JsWake();
  w->loop = loop;
  w->env = env;
  w->loopProgress = loopProgress;
  w->loopThread = std::this_thread::get_id();
  if (uv_async_init(loop, &w->async, [](uv_async_t* a) {
        auto* self = static_cast<JsWake*>(a->data);
        self->woke();
        self->deliver();
      }) != 0) {
    delete w;
    return nullptr;
  }
  w->async.data = w;
  w->open = 1;
  uv_unref(reinterpret_cast<uv_handle_t*>(&w->async));
  uv_idle_init(loop, &w->idle);
  w->idle.data = w;
  w->open++;
  uv_unref(reinterpret_cast<uv_handle_t*>(&w->idle));  // spinning never keeps the process alive
  uv_prepare_init(loop, &w->sleepPrepare);
  w->sleepPrepare.data = w;
  w->open++;
  uv_unref(reinterpret_cast<uv_handle_t*>(&w->sleepPrepare));
  napi_create_reference(env, onEvents, 1, &w->onEvents);
  napi_async_init(env, nullptr, Napi::String::New(env, "rvma.events"), &w->context);
  return w;
}

ExternalPoller* pollerOf(JsWake* w) { return w->loopProgress ? w : nullptr; }

void attachJsWake(JsWake* w, const std::shared_ptr<Engine>& engine) {
  w->engine = engine;
  w->sleepHooks = engine->hasSleepHooks();
  if (w->loopProgress) uv_prepare_start(&w->sleepPrepare, JsWake::onSleepPrepare);
}

void signalJsWake(JsWake* w) { w->signal(); }

void refJsWake(JsWake* w, bool on) { w->ref(on); }

uint64_t jsWakeups(const JsWake* w) { return w->wakeups; }

void stopJsWake(JsWake* w) {
  w->engine.reset();
  napi_delete_reference(w->env, w->onEvents);
  w->events.release(w->env);
  napi_async_destroy(w->env, w->context);
  for (auto& [token, fd] : w->fds) w->close(fd);  // e.g. timers the engine never removes
  w->fds.clear();
  uv_close(reinterpret_cast<uv_handle_t*>(&w->async), [](uv_handle_t* h) { static_cast<JsWake*>(h->data)->closed(); });
  uv_idle_stop(&w->idle);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->idle), [](uv_handle_t* h) { static_cast<JsWake*>(h->data)->closed(); });
  uv_prepare_stop(&w->sleepPrepare);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->sleepPrepare), [](uv_handle_t* h) { static_cast<JsWake*>(h->data)->closed(); });
}

}  // namespace rvma::addon
