// How completions reach JS: a libuv async handle that any thread may signal (libuv
// coalesces the signals, so JS wakes once per batch) and, in loop progress, a libuv poll
// per provider fd so provider work runs on the JS thread straight from the event loop.
// Either way the batch is handed to onEvents(events, words, texts) from the libuv callback.
#pragma once
#include <napi.h>

#include <memory>

#include "../engine.h"

namespace rvma::addon {

class JsWake;

// Starts the wake-up (nullptr if libuv refused). In loop mode, pass poller() to
// Engine::create, then attach() the engine it made.
JsWake* startJsWake(Napi::Env env, Napi::Function onEvents, bool loopProgress);
ExternalPoller* pollerOf(JsWake* wake);  // nullptr in thread mode
void attachJsWake(JsWake* wake, const std::shared_ptr<Engine>& engine);
// Any thread: schedule a delivery on the JS thread.
void signalJsWake(JsWake* wake);
// JS thread: whether the handles keep the event loop alive.
void refJsWake(JsWake* wake, bool on);
// JS thread: the event loop's wake-ups this endpoint caused (see JsWake::wakeups).
uint64_t jsWakeups(const JsWake* wake);
// JS thread: stops; frees itself once libuv has closed every handle.
void stopJsWake(JsWake* wake);

}  // namespace rvma::addon
