// How completions reach JS: a libuv async handle that any thread may signal (libuv
// coalesces the signals, so JS wakes once per batch) and, in loop progress, a libuv poll
// on the endpoint's epoll fd so provider work runs on the JS thread. Either way the batch
// is handed to onEvents(events, texts) straight from the libuv callback.
#pragma once
#include <napi.h>

#include <memory>

#include "../engine.h"

namespace rvma::addon {

class JsWake;

// Starts watching; nullptr if libuv refused (the caller reports it).
JsWake* startJsWake(Napi::Env env, const std::shared_ptr<Engine>& engine, Napi::Function onEvents, bool pollProgress);
// Any thread: schedule a delivery on the JS thread.
void signalJsWake(JsWake* wake);
// JS thread: whether the handles keep the event loop alive.
void refJsWake(JsWake* wake, bool on);
// JS thread: stops; frees itself once libuv has closed the handles.
void stopJsWake(JsWake* wake);

}  // namespace rvma::addon
