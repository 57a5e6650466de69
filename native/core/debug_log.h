// NODE_DEBUG=rvma (or a pattern matching it, as Node's util.debuglog takes them): one line on
// stderr per connection event, written as util.debuglog writes ("RVMA <pid>: ..."). The
// variable is read once; with logging off a call site costs one predictable branch, and the
// line is not even built.
#pragma once

#include <string>

#include <cstdint>

namespace rvma {

bool debugLogEnabled();
void debugLogLine(const std::string& line);

// The lines every provider writes about its connections, in one form (call through
// RVMA_DEBUG_LOG, so that nothing is built with logging off).
// "<provider>: connected to|accepted node "N" (incarnation I<detail>)[ at ADDRESS]"
std::string connectionUpLine(const char* provider, bool outgoing, const std::string& node, uint64_t incarnation,
                             const std::string& address, const std::string& detail = std::string());
// "<provider>: connection to|from PEER ended|refused or failed before its handshake: WHY[ (WHAT)]";
// peer: a node id (quoted) or, when empty, `unnamed` as it is.
std::string connectionEndLine(const char* provider, bool outgoing, const std::string& node, const std::string& unnamed,
                              bool wasReady, const std::string& why, const char* what);

}  // namespace rvma

#define RVMA_DEBUG_LOG(line)                                          \
  do {                                                                \
    if (::rvma::debugLogEnabled()) ::rvma::debugLogLine(line);        \
  } while (0)
