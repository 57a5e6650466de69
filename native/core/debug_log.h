// NODE_DEBUG=rvma (or a pattern matching it, as Node's util.debuglog takes them): one line on
// stderr per connection event, written as util.debuglog writes ("RVMA <pid>: ..."). The
// variable is read once; with logging off a call site costs one predictable branch, and the
// line is not even built.
#pragma once

#include <string>

namespace rvma {

bool debugLogEnabled();
void debugLogLine(const std::string& line);

}  // namespace rvma

#define RVMA_DEBUG_LOG(line)                                          \
  do {                                                                \
    if (::rvma::debugLogEnabled()) ::rvma::debugLogLine(line);        \
  } while (0)
