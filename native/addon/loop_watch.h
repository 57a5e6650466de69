// Loop progress: libuv watches the endpoint's epoll fd on the JS thread, and each
// readiness runs the endpoint's provider work there (no extra thread, no cross-CPU hop).
#pragma once
#include <napi.h>

#include <memory>

#include "../engine.h"

namespace rvma::addon {

struct LoopWatch {
  static LoopWatch* start(Napi::Env env, const std::shared_ptr<Engine>& engine);
  static void ref(LoopWatch* watch, bool on);
  static void stop(LoopWatch* watch);  // frees it once libuv has closed the handle
};

}  // namespace rvma::addon
