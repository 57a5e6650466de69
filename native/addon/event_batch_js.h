// An engine's event batch as the two JS arguments of onEvents(events, texts).
#pragma once
#include <napi.h>

#include "../engine.h"

namespace rvma::addon {

// Fills args[0] (Float64Array, Event::kWords per event) and args[1] (string[]).
void eventBatchArgs(napi_env env, const EventBatch& batch, napi_value args[2]);

}  // namespace rvma::addon
