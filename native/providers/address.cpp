#include "address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace rvma {

bool parseAddress(const std::string& scheme, const std::string& address, std::string* host, uint16_t* port) {
  if (address.compare(0, scheme.size(), scheme) != 0) return false;
  std::string rest = address.substr(scheme.size());
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) return false;
  std::string h = rest.substr(0, colon);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  std::string p = rest.substr(colon + 1);
  if (p.size() > 5 || !std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return false;
  }
  unsigned long value = std::stoul(p);
  if (value > 65535) return false;
  *host = h;
  *port = uint16_t(value);
  return true;
}

bool resolveAddress(const std::string& host, uint16_t port, sockaddr_storage* out, socklen_t* len, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0 || !result) {
    *error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return false;
  }
  std::memcpy(out, result->ai_addr, result->ai_addrlen);
  *len = result->ai_addrlen;
  freeaddrinfo(result);
  return true;
}

std::string peerHost(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char host[INET6_ADDRSTRLEN] = {};
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return std::string();
  if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, host, sizeof host);
  } else if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, host, sizeof host);
  }
  return host;
}

}  // namespace rvma
