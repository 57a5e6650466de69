// A mailbox whose completions native code takes instead of JS (a ring channel's frames: JS then
// reads what arrived from memory it shares with that code, with no event per completion).
#pragma once
#include "mailbox.h"

namespace rvma {

class CompletionClaim {
 public:
  virtual ~CompletionClaim() = default;
  // Runs wherever the epoch ended (the progress context or the JS thread), under the mailbox
  // table's lock: it must be quick and must not call the table.
  virtual void completed(const CompletionRecord& record) = 0;
};

}  // namespace rvma
