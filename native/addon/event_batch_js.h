// An engine's event batch as the JS arguments of onEvents(events, words, texts).
#pragma once
#include <napi.h>

#include "../engine.h"

namespace rvma::addon {

// One Float64Array reused for every batch that fits (Event::kWords doubles per event), so a
// delivery allocates no ArrayBuffer. onEvents reads it synchronously; a delivery nested
// inside another one gets a fresh array, never the one still being read.
class EventArray {
 public:
  EventArray() = default;
  EventArray(const EventArray&) = delete;
  EventArray& operator=(const EventArray&) = delete;
  void release(napi_env env);

  // Fills args[0] (Float64Array), args[1] (words used) and args[2] (string[] or undefined).
  // True when it handed out the reused array: pass that to finished() once onEvents returned.
  bool args(napi_env env, const EventBatch& batch, napi_value out[3]);
  void finished(bool reused) {
    if (reused) busy_ = false;
  }

 private:
  static constexpr size_t kWords = 512 * Event::kWords;
  napi_ref array_ = nullptr;
  double* data_ = nullptr;
  bool busy_ = false;
};

}  // namespace rvma::addon
