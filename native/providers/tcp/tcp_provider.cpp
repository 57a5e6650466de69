#include "tcp_provider.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace rvma {

namespace {

void tuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string formatAddress(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port;
  if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return "tcp://[" + std::string(host) + "]:" + std::to_string(port);
  }
  auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
  inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  port = ntohs(a->sin_port);
  return "tcp://" + std::string(host) + ":" + std::to_string(port);
}

}  // namespace

TcpProvider::TcpProvider(ProviderContext ctx, TcpOptions options, uint64_t incarnation)
    : ctx_(std::move(ctx)), options_(std::move(options)), incarnation_(incarnation), splitsIn_(ctx_.table) {}

TcpProvider::~TcpProvider() { close(); }

uint64_t TcpProvider::nowMs() {
  using namespace std::chrono;
  return uint64_t(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

bool TcpProvider::listen(std::string* error) {
  if (options_.listen.empty()) return true;
  std::string host;
  uint16_t port;
  if (!parseTcpAddress(options_.listen, &host, &port)) {
    *error = "listen address must look like tcp://HOST:PORT, got \"" + options_.listen + "\"";
    return false;
  }
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!resolveAddress(host, port, &addr, &len, error)) return false;
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 512) != 0) {
    *error = "cannot listen on " + options_.listen + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return false;
  }
  sockaddr_storage bound{};
  socklen_t boundLen = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &boundLen);
  bound_ = formatAddress(bound);
  wildcard_ = bound_.rfind("tcp://0.0.0.0:", 0) == 0 || bound_.rfind("tcp://[::]:", 0) == 0;
  listenFd_ = fd;
  return true;
}

void TcpProvider::start() {
  if (listenFd_ >= 0) listenToken_ = ctx_.progress.add(listenFd_, EPOLLIN, [this](uint32_t) { onAccept(); });
  uint32_t interval = std::max<uint32_t>(10, std::min(options_.keepaliveMs, options_.peerTimeoutMs) / 2);
  ctx_.progress.every(interval, [this] {
    dead_.clear();
    uint64_t now = nowMs();
    // tick() may kill a connection, which removes it from conns_: iterate over a copy.
    std::vector<TcpConnection*> live;
    for (auto& c : conns_) live.push_back(c.get());
    for (TcpConnection* c : live) c->tick(now);
  });
}

wire::Hello TcpProvider::hello(int fd) const {
  wire::Hello h;
  h.incarnation = incarnation_;
  h.nodeId = ctx_.nodeId;
  h.listenAddress = bound_;
  if (listenFd_ >= 0 && wildcard_) {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      std::string host = formatAddress(local);
      h.listenAddress = host.substr(0, host.rfind(':')) + bound_.substr(bound_.rfind(':'));
    }
  }
  return h;
}

void TcpProvider::onAccept() {
  for (;;) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    int fd = accept4(listenFd_, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a transient error: the next readiness retries
    tuneSocket(fd);
    // The remote address names the peer until its hello does (e.g. in protocol errors).
    adopt(fd, formatAddress(from));
  }
}

void TcpProvider::adopt(int fd, const std::string& from) {
  conns_.push_back(std::make_unique<TcpConnection>(*this, fd, false, from));
  conns_.back()->start(nowMs());
}

bool TcpProvider::reaches(const std::string& peer) {
  if (peer.compare(0, 6, "tcp://") == 0) return true;
  std::lock_guard<std::mutex> lock(knownMu_);
  return known_.count(peer) > 0;
}

TcpConnection* TcpProvider::dialOne(const std::string& address, Status* status) {
  std::string host, error;
  uint16_t port;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!parseTcpAddress(address, &host, &port)) {
    *status = Status::InvalidArgument;
    return nullptr;
  }
  if (!resolveAddress(host, port, &addr, &len, &error)) {
    *status = Status::NoPeer;
    return nullptr;
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *status = Status::NoPeer;
    return nullptr;
  }
  tuneSocket(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    *status = Status::NoPeer;
    return nullptr;
  }
  conns_.push_back(std::make_unique<TcpConnection>(*this, fd, true, address));
  TcpConnection* conn = conns_.back().get();
  byAddress_[address].push_back(conn);
  conn->start(nowMs());
  return conn;
}

std::vector<TcpConnection*> TcpProvider::dial(const std::string& address, Status* status) {
  auto existing = byAddress_.find(address);
  if (existing != byAddress_.end() && !existing->second.empty()) return existing->second;
  std::vector<TcpConnection*> group;
  for (uint32_t i = 0; i < std::max<uint32_t>(1, options_.stripes); i++) {
    TcpConnection* conn = dialOne(address, status);
    if (!conn) break;
    group.push_back(conn);
  }
  return group;
}

std::vector<TcpConnection*> TcpProvider::route(const std::string& peer, Status* status) {
  if (peer.compare(0, 6, "tcp://") == 0) return dial(peer, status);
  auto it = byNode_.find(peer);
  if (it != byNode_.end() && !it->second.empty()) return it->second;
  // Known from an earlier connection that died: dial its advertised address again.
  auto addr = addressOfNode_.find(peer);
  if (addr != addressOfNode_.end() && !addr->second.empty()) {
    std::vector<TcpConnection*> group = dial(addr->second, status);
    for (TcpConnection* conn : group) {
      if (conn->state() != TcpConnection::State::Ready) {
        conn->expectNode(peer);
      } else if (conn->peerNodeId() != peer) {
        *status = Status::PeerLost;  // another node answers there now: ours is gone
        return {};
      }
    }
    return group;
  }
  *status = Status::NoPeer;
  return {};
}

void TcpProvider::put(const PutRequest& req) {
  Status status = Status::NoPeer;
  std::vector<TcpConnection*> conns = route(req.peer, &status);
  if (conns.empty()) {
    ctx_.events.putDone(req.id, status == Status::NoPeer && req.incarnation ? Status::PeerLost : status);
    return;
  }
  std::vector<TcpConnection*> ready;
  for (TcpConnection* c : conns) {
    if (c->state() == TcpConnection::State::Ready) ready.push_back(c);
  }
  if (ready.size() > 1 && !req.raw && !req.where.append && req.len >= options_.stripeMinBytes) {
    split(req, ready);
    return;
  }
  // Whole puts rotate over the ready connections (order never matters); before the
  // handshake they queue on the first connection.
  TcpConnection* conn = ready.empty() ? conns.front() : ready[nextStripe_++ % ready.size()];
  conn->put(req);
}

// Offset-addressed parts, one per ready connection, page-aligned so each lands on its own pages.
void TcpProvider::split(const PutRequest& req, const std::vector<TcpConnection*>& ready) {
  uint32_t parts = uint32_t(std::min<size_t>(ready.size(), wire::kMaxParts));
  uint64_t chunk = ((req.len + parts - 1) / parts + 4095) & ~uint64_t(4095);
  parts = uint32_t((req.len + chunk - 1) / chunk);
  if (parts < 2) {
    ready.front()->put(req);
    return;
  }
  SplitPut& split = splits_[req.id];
  split.remaining = parts;
  std::vector<std::pair<TcpConnection*, PutRequest>> all;
  for (uint32_t i = 0; i < parts; i++) {
    PutRequest part = req;
    uint64_t begin = uint64_t(i) * chunk;
    part.data = req.data + begin;
    part.len = std::min(chunk, req.len - begin);
    part.where.offset = req.where.offset + begin;
    part.parts = parts;
    part.wholeOffset = req.where.offset;
    part.wholeLen = req.len;
    all.emplace_back(ready[i], std::move(part));
  }
  if (!options_.stripeReverse) {
    for (auto& [conn, part] : all) conn->put(part);
    return;
  }
  // Last part first, each only after the previous one was answered: the receiver sees
  // the put's bytes strictly back to front.
  for (auto it = all.rbegin(); it != all.rend(); ++it) split.unsent.push_back(std::move(*it));
  auto [conn, part] = std::move(split.unsent.front());
  split.unsent.pop_front();
  conn->put(part);
}

void TcpProvider::putFinished(uint64_t putId, Status status) {
  auto it = splits_.find(putId);
  if (it == splits_.end()) {
    ctx_.events.putDone(putId, status);
    return;
  }
  SplitPut& split = it->second;
  if (!ok(status) && ok(split.status)) split.status = status;
  if (--split.remaining > 0) {
    if (!split.unsent.empty()) {
      auto [conn, part] = std::move(split.unsent.front());
      split.unsent.pop_front();
      if (ok(split.status) && conn->state() != TcpConnection::State::Dead) {
        conn->put(part);
      } else {
        putFinished(putId, ok(split.status) ? Status::PeerLost : split.status);
      }
    }
    return;
  }
  Status final = split.status;
  splits_.erase(it);
  ctx_.events.putDone(putId, final);
}

void TcpProvider::connect(uint64_t requestId, const std::string& address) {
  Status status = Status::NoPeer;
  std::vector<TcpConnection*> group = dial(address, &status);
  if (group.empty()) {
    ctx_.events.connected(requestId, status, "cannot connect to " + address);
    return;
  }
  for (TcpConnection* conn : group) {
    if (conn->state() == TcpConnection::State::Ready) {
      ctx_.events.connected(requestId, Status::Ok, conn->peerNodeId());
      return;
    }
  }
  group.front()->connectRequests().push_back(requestId);
}

void TcpProvider::onHandshake(TcpConnection* conn) {
  const std::string& node = conn->peerNodeId();
  byNode_[node].push_back(conn);
  // Where to dial this node again after a loss: what it advertises, else where we reached it.
  addressOfNode_[node] = conn->peerListenAddress().empty() ? conn->redialAddress() : conn->peerListenAddress();
  {
    // Known before connect() resolves: under thread progress JS may put by node id at once.
    std::lock_guard<std::mutex> lock(knownMu_);
    known_.insert(node);
  }
  for (uint64_t request : conn->connectRequests()) ctx_.events.connected(request, Status::Ok, node);
  conn->connectRequests().clear();
}

void TcpProvider::onDead(TcpConnection* conn) {
  auto unlink = [conn](auto& map, const std::string& key) {
    auto it = map.find(key);
    if (it == map.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), conn), list.end());
    if (list.empty()) map.erase(it);
  };
  unlink(byNode_, conn->peerNodeId());
  unlink(byAddress_, conn->dialAddress());
  // Parts of split puts from a node with no connection left can never complete.
  if (!byNode_.count(conn->peerNodeId())) splitsIn_.forgetNode(conn->peerNodeId());
  auto it = std::find_if(conns_.begin(), conns_.end(), [conn](auto& c) { return c.get() == conn; });
  if (it != conns_.end()) {
    dead_.push_back(std::move(*it));
    conns_.erase(it);
  }
}

void TcpProvider::close() {
  auto conns = std::move(conns_);  // fail() unlinks from conns_, so walk a detached list
  conns_.clear();
  for (auto& c : conns) c->fail(Status::Closed, "endpoint closed", false);
  dead_.clear();
  if (listenFd_ >= 0) {
    ctx_.progress.remove(listenToken_, listenFd_);
    ::close(listenFd_);
    listenFd_ = -1;
  }
}

}  // namespace rvma
