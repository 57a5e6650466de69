#include "debug_log.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace rvma {
namespace {

// util.debuglog's patterns: comma-separated names, case-insensitive, '*' matching any run.
bool matches(const std::string& pattern, size_t p, const std::string& name, size_t n) {
  if (p == pattern.size()) return n == name.size();
  if (pattern[p] == '*') return matches(pattern, p + 1, name, n) || (n < name.size() && matches(pattern, p, name, n + 1));
  return n < name.size() && std::tolower(static_cast<unsigned char>(pattern[p])) == name[n] && matches(pattern, p + 1, name, n + 1);
}

bool enabledByEnvironment() {
  const char* value = std::getenv("NODE_DEBUG");
  if (!value) return false;
  std::string list(value);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string token = list.substr(start, end - start);
    size_t a = token.find_first_not_of(" \t");
    size_t b = token.find_last_not_of(" \t");
    if (a != std::string::npos && matches(token.substr(a, b - a + 1), 0, "rvma", 0)) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool debugLogEnabled() {
  static const bool enabled = enabledByEnvironment();
  return enabled;
}

void debugLogLine(const std::string& line) {
  // One write per line: lines of threads and processes sharing stderr do not interleave.
  std::string out = "RVMA " + std::to_string(getpid()) + ": " + line + "\n";
  ssize_t written = ::write(STDERR_FILENO, out.data(), out.size());
  (void)written;
}

std::string connectionUpLine(const char* provider, bool outgoing, const std::string& node, uint64_t incarnation,
                             const std::string& address, const std::string& detail) {
  return std::string(provider) + ": " + (outgoing ? "connected to" : "accepted") + " node \"" + node + "\" (incarnation " +
         std::to_string(incarnation) + detail + ")" + (outgoing ? " at " + address : std::string());
}

std::string connectionEndLine(const char* provider, bool outgoing, const std::string& node, const std::string& unnamed,
                              bool wasReady, const std::string& why, const char* what) {
  return std::string(provider) + ": connection " + (outgoing ? "to " : "from ") + (node.empty() ? unnamed : "\"" + node + "\"") +
         (wasReady ? " ended: " : " refused or failed before its handshake: ") + why + (*what ? std::string(" (") + what + ")" : "");
}

}  // namespace rvma
