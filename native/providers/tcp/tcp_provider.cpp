#include "tcp_provider.h"

#include "../../core/debug_log.h"

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

// Floor frames go out once per this many settled put ids (and on the keepalive tick): the
// receiver's window of outcomes stays about this much larger than the puts in flight.
constexpr uint64_t kFloorStride = 256;
// A whole put up to this size joins a connection that writes in this round anyway (earlier puts
// of the round, or answers), so that they leave in one write; larger ones rotate over the
// connections (a node that dialed us and that we dialed has two).
constexpr uint64_t kJoinRoundMaxBytes = 64 * 1024;

bool isAddress(const std::string& peer) { return peer.compare(0, 6, "tcp://") == 0; }

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
    : ctx_(std::move(ctx)), options_(std::move(options)), incarnation_(incarnation),
      lazyAcks_(ctx_.progress, kLazyAckDelayMs, [](TcpConnection* c) { c->endRound(); }),
      lateAcks_(ctx_.progress, kLateAckDelayMs, [](TcpConnection* c) { c->endRound(); }),
      reconnectTimer_(ctx_.progress, [this] { onReconnectTimer(); }), inbound_(ctx_.table, options_.reconnectMs) {}

TcpProvider::~TcpProvider() { close(); }

uint64_t TcpProvider::nowMs() {
  using namespace std::chrono;
  return uint64_t(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

bool TcpProvider::listen(std::string* error, Status* status) {
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
    *status = listenFailure(errno);
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
  lazyAcks_.prepare();
  lateAcks_.prepare();
  reconnectTimer_.prepare();
  ctx_.progress.atRoundEnd([this] {
    // Sending may make a connection fail, which takes it off the list: walk a detached copy.
    std::vector<TcpConnection*> due;
    due.swap(roundPending_);
    for (TcpConnection* c : due) {
      c->roundPending = false;
      c->endRound();
    }
  });
  uint32_t interval = std::max<uint32_t>(10, std::min(options_.keepaliveMs, options_.peerTimeoutMs) / 2);
  tickGap_ = TickGap(interval, nowMs());
  ctx_.progress.every(interval, [this] {
    dead_.clear();
    if (acceptPaused_ && listenFd_ >= 0) {
      acceptPaused_ = false;
      ctx_.progress.modify(listenToken_, listenFd_, EPOLLIN);
    }
    uint64_t now = nowMs();
    uint64_t missed = tickGap_.missed(now);
    // tick() may kill a connection, which removes it from conns_: iterate over a copy.
    std::vector<TcpConnection*> live;
    for (auto& c : conns_) live.push_back(c.get());
    for (TcpConnection* c : live) c->tick(now, missed);
    inbound_.expire(now);
    // Announcing may open connections, which may add nodes: walk a list.
    std::vector<SentPuts::Node*> nodes;
    sent_.forEach([&nodes](SentPuts::Node& n) { nodes.push_back(&n); });
    for (SentPuts::Node* n : nodes) announceFloor(n, 1);
  });
}

wire::Hello TcpProvider::hello(int fd) const {
  wire::Hello h;
  h.incarnation = incarnation_;
  h.nodeId = ctx_.nodeId;
  h.listenAddress = bound_;
  h.flags = ctx_.auth.enabled() ? wire::kHelloAuth : 0;
  auth::PeerAuth::freshNonce(&h.nonce);
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
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pauseAccepting();
      return;  // EAGAIN, or a transient error: the next readiness retries
    }
    if (!roomToAccept()) {
      ::close(fd);  // at maxConnections: a peer over it learns at once, and holds nothing
      continue;
    }
    tuneSocket(fd);
    // The remote address names the peer until its hello does (e.g. in protocol errors).
    adopt(fd, formatAddress(from));
  }
}

void TcpProvider::pauseAccepting() {
  acceptPaused_ = true;
  ctx_.progress.modify(listenToken_, listenFd_, 0);
}

bool TcpProvider::roomToAccept() {
  if (accepted_ >= options_.maxConnections) return false;
  if (handshaking_ < options_.maxHandshakes) return true;
  // The oldest handshake makes room: slow or idle ones cannot keep every newcomer out.
  for (auto& c : conns_) {
    if (!c->outgoing() && c->state() == TcpConnection::State::Handshake) {
      c->fail(Status::NoPeer, "more than " + std::to_string(options_.maxHandshakes) +
                                  " connections were in their handshake; this was the oldest", false);
      return true;
    }
  }
  return true;
}

void TcpProvider::adopt(int fd, const std::string& from) {
  conns_.push_back(std::make_unique<TcpConnection>(*this, fd, false, from, nextSerial_++));
  accepted_++;
  handshaking_++;
  conns_.back()->start(nowMs());
}

Status TcpProvider::dialable(const std::string& address) const {
  if (!isAddress(address)) return Status::NoPeer;
  std::string host;
  uint16_t port;
  return parseTcpAddress(address, &host, &port) ? Status::Ok : Status::InvalidArgument;
}

void TcpProvider::describePeers(std::vector<PeerInfo>* out) {
  std::lock_guard<std::mutex> lock(knownMu_);
  for (const std::string& node : known_) out->push_back(PeerInfo{node, "tcp", ""});
}

bool TcpProvider::reaches(const std::string& peer) {
  if (isAddress(peer)) return true;
  std::lock_guard<std::mutex> lock(knownMu_);
  return known_.count(peer) > 0;
}

TcpConnection* TcpProvider::dialOne(const std::string& address, Status* status, bool* refused) {
  std::string host, error;
  uint16_t port;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!parseTcpAddress(address, &host, &port)) {
    *status = Status::InvalidArgument;
    return nullptr;
  }
  if (!resolveAddress(host, port, &addr, &len, &error)) {
    dialError_ = error;
    *status = Status::NoPeer;
    return nullptr;
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    dialError_ = "connect to " + address + " failed: " + std::strerror(errno);
    *status = Status::NoPeer;
    return nullptr;
  }
  tuneSocket(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS) {
    if (refused) *refused = errno == ECONNREFUSED;
    dialError_ = "connect to " + address + " failed: " + std::strerror(errno);
    ::close(fd);
    *status = Status::NoPeer;
    return nullptr;
  }
  conns_.push_back(std::make_unique<TcpConnection>(*this, fd, true, address, nextSerial_++));
  TcpConnection* conn = conns_.back().get();
  byAddress_[address].push_back(conn);
  conn->start(nowMs());
  return conn;
}

// Dead connections leave their group (unlink), so a group short of `stripes` has lost some:
// it is topped up, not reused as it is.
std::vector<TcpConnection*> TcpProvider::dial(const std::string& address, Status* status, bool* refused) {
  size_t want = std::max<uint32_t>(1, options_.stripes);
  for (size_t have = byAddress_.count(address) ? byAddress_[address].size() : 0; have < want; have++) {
    if (!dialOne(address, status, refused)) break;
    if (refused) refused = nullptr;  // only the first dial tells whether anything listens
  }
  auto it = byAddress_.find(address);
  return it == byAddress_.end() ? std::vector<TcpConnection*>{} : it->second;
}

void TcpProvider::topUp(const std::string& node) {
  auto addr = addressOfNode_.find(node);
  if (addr == addressOfNode_.end() || addr->second.empty()) return;
  auto group = byAddress_.find(addr->second);
  // Only what this side dialed: a node that dialed us keeps its own stripes up.
  if (group == byAddress_.end() || group->second.size() >= std::max<uint32_t>(1, options_.stripes)) return;
  Status status = Status::NoPeer;
  for (TcpConnection* conn : dial(addr->second, &status)) {
    if (conn->state() != TcpConnection::State::Ready) conn->expectNode(node);
  }
}

std::vector<TcpConnection*> TcpProvider::route(const std::string& peer, Status* status) {
  if (isAddress(peer)) return dial(peer, status);
  auto it = byNode_.find(peer);
  if (it != byNode_.end() && !it->second.empty()) {
    std::vector<TcpConnection*> ready = it->second;
    if (ready.size() < options_.stripes) topUp(peer);
    return ready;
  }
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

std::vector<TcpConnection*> TcpProvider::readyOf(const std::string& node, uint64_t incarnation) const {
  std::vector<TcpConnection*> ready;
  auto it = byNode_.find(node);
  if (it == byNode_.end()) return ready;
  for (TcpConnection* c : it->second) {
    if (c->state() == TcpConnection::State::Ready && c->peerIncarnation() == incarnation) ready.push_back(c);
  }
  return ready;
}

void TcpProvider::put(PutRequest req) { send(OutPut{std::move(req)}); }

void TcpProvider::send(OutPut p) {
  if (!reconnecting_.empty() && !isAddress(*p.req.peer)) {
    // The node's connection broke: new puts queue behind the kept ones, with their deadline.
    auto r = reconnecting_.find(*p.req.peer);
    if (r != reconnecting_.end()) {
      if (p.req.incarnation != 0 && p.req.incarnation != r->second.incarnation) {
        putFinished(p, Status::PeerLost);
      } else {
        r->second.puts.push_back(std::move(p));
      }
      return;
    }
  }
  // The common case, without building lists: a node with exactly one connection, ready,
  // and the stripes it should have (dispatch would pick it, and split nothing).
  if (options_.stripes <= 1) {
    auto it = byNode_.find(*p.req.peer);
    if (it != byNode_.end() && it->second.size() == 1 && it->second.front()->state() == TcpConnection::State::Ready) {
      it->second.front()->put(std::move(p));
      return;
    }
  }
  Status status = Status::NoPeer;
  dialError_.clear();
  std::vector<TcpConnection*> conns = route(*p.req.peer, &status);
  if (conns.empty()) {
    bool gone = status == Status::NoPeer && (p.req.incarnation != 0 || p.wireId != 0);
    putFinished(p, gone ? Status::PeerLost : status, dialError_);
    return;
  }
  dispatch(conns, std::move(p));
}

void TcpProvider::dispatch(const std::vector<TcpConnection*>& conns, OutPut p) {
  if (conns.empty()) {
    putFinished(p, Status::PeerLost);
    return;
  }
  std::vector<TcpConnection*> ready;
  for (TcpConnection* c : conns) {
    if (c->state() == TcpConnection::State::Ready) ready.push_back(c);
  }
  // A put that went out before keeps its shape: whole, or the same part.
  const PutRequest& req = p.req;
  if (p.wireId == 0 && req.parts == 0 && ready.size() > 1 && !req.raw && !req.where.append &&
      req.len >= options_.stripeMinBytes) {
    split(req, std::move(ready));
    return;
  }
  // Whole puts rotate over the ready connections (order never matters); before the
  // handshake they queue on the first connection.
  TcpConnection* conn = nullptr;
  if (req.len <= kJoinRoundMaxBytes) {
    for (TcpConnection* c : ready) {
      if (c->roundPending) {
        conn = c;
        break;
      }
    }
  }
  if (!conn) conn = ready.empty() ? conns.front() : ready[nextStripe_++ % ready.size()];
  conn->put(std::move(p));
}

// Offset-addressed parts, one per ready connection, page-aligned so each lands on its own
// pages. All parts carry the same put id, and go into one window of one incarnation (the
// receiver assembles them there).
void TcpProvider::split(const PutRequest& req, std::vector<TcpConnection*> ready) {
  auto known = std::find_if(ready.begin(), ready.end(), [](TcpConnection* c) { return c->peerWindow() != 0; });
  if (known == ready.end()) {  // none can take a put yet: it waits, whole, on one
    ready.front()->put(OutPut{req});
    return;
  }
  uint64_t incarnation = (*known)->peerIncarnation(), window = (*known)->peerWindow();
  ready.erase(std::remove_if(ready.begin(), ready.end(),
                             [&](TcpConnection* c) { return c->peerIncarnation() != incarnation || c->peerWindow() != window; }),
              ready.end());
  if (ready.size() < 2) {
    ready.front()->put(OutPut{req});
    return;
  }
  uint32_t parts = uint32_t(std::min<size_t>(ready.size(), wire::kMaxParts));
  uint64_t chunk = ((req.len + parts - 1) / parts + 4095) & ~uint64_t(4095);
  parts = uint32_t((req.len + chunk - 1) / chunk);
  if (parts < 2) {
    ready.front()->put(OutPut{req});
    return;
  }
  SplitPut& split = splits_[req.id];
  split.remaining = parts;
  split.wireId = sent_.assign(ready.front()->peerNodeId(), &split.to);
  std::vector<std::pair<TcpConnection*, OutPut>> all;
  for (uint32_t i = 0; i < parts; i++) {
    PutRequest part = req;
    uint64_t begin = uint64_t(i) * chunk;
    part.len = std::min(chunk, req.len - begin);
    // A gathered put's head belongs to the parts it overlaps: each sends its slices in place.
    part.headLen = begin < req.headLen ? std::min(req.headLen - begin, part.len) : 0;
    part.head = part.headLen ? req.head + begin : nullptr;
    part.data = req.data + (std::max(begin, req.headLen) - req.headLen);
    part.where.offset = req.where.offset + begin;
    part.parts = parts;
    part.wholeOffset = req.where.offset;
    part.wholeLen = req.len;
    all.emplace_back(ready[i], OutPut{std::move(part), split.wireId, incarnation, window, split.to});
  }
  if (!options_.stripeReverse) {
    for (auto& [conn, part] : all) conn->put(std::move(part));
    return;
  }
  // Last part first, each only after the previous one was answered: the receiver sees
  // the put's bytes strictly back to front.
  for (auto it = all.rbegin(); it != all.rend(); ++it) split.unsent.push_back(std::move(it->second));
  OutPut first = std::move(split.unsent.front());
  split.unsent.pop_front();
  all.back().first->put(std::move(first));
}

void TcpProvider::putFinished(const OutPut& p, Status status, const std::string& reason) {
  if (p.req.parts == 0) {
    if (p.to) {
      sent_.settle(p.to, p.wireId);
      announceFloor(p.to, kFloorStride);
    }
    ctx_.events.putSettled(p.req.id, status, ok(status) ? std::string() : reason);
    return;
  }
  auto it = splits_.find(p.req.id);
  if (it == splits_.end()) return;  // reported already
  SplitPut& split = it->second;
  if (!ok(status) && ok(split.status)) split.status = status;
  if (--split.remaining > 0) {
    if (!split.unsent.empty()) {
      OutPut next = std::move(split.unsent.front());
      split.unsent.pop_front();
      if (ok(split.status)) {
        send(std::move(next));
      } else {
        putFinished(next, split.status);
      }
    }
    return;
  }
  Status final = split.status;
  SentPuts::Node* to = split.to;
  uint64_t wireId = split.wireId;
  splits_.erase(it);
  sent_.settle(to, wireId);
  ctx_.events.putSettled(p.req.id, final);
  announceFloor(to, kFloorStride);
}

void TcpProvider::announceFloor(SentPuts::Node* to, uint64_t stride) {
  // Any ready connection will do: the node's window is shared by all of ours. With none, a
  // later tick tells it. Checked first, as most settled puts do not move the floor far enough.
  uint64_t floor;
  if (!sent_.due(to, stride, &floor)) return;
  auto it = byNode_.find(to->id);
  if (it == byNode_.end()) return;
  for (TcpConnection* c : it->second) {
    if (c->state() != TcpConnection::State::Ready) continue;
    sent_.told(to, floor);
    c->sendFloor(floor);
    return;
  }
}

void TcpProvider::connect(uint64_t requestId, const std::string& address) {
  Status status = Status::NoPeer;
  std::vector<TcpConnection*> group = dial(address, &status);
  if (group.empty()) {
    ctx_.events.connected(requestId, status, "cannot connect to " + address);
    return;
  }
  for (TcpConnection* conn : group) {
    if (conn->state() == TcpConnection::State::Ready && conn->peerWindow() != 0) {
      ctx_.events.connected(requestId, Status::Ok, conn->peerNodeId());
      return;
    }
  }
  group.front()->connectRequests().push_back(requestId);
}

bool TcpProvider::admit(TcpConnection* conn, std::string* why) {
  auto it = byNode_.find(conn->peerNodeId());
  if (it != byNode_.end()) {
    for (TcpConnection* c : it->second) {
      if (c->peerIncarnation() != conn->peerIncarnation()) {
        *why = "node \"" + conn->peerNodeId() +
               "\" is connected already as another incarnation; a second one is refused while the first lives";
        return false;
      }
      // Its incarnation is no secret (every hello carries it), but a node's own connections
      // all come from its host.
      if (c->remoteHost() != conn->remoteHost()) {
        *why = "node \"" + conn->peerNodeId() + "\" is connected already from " + c->remoteHost() +
               "; a connection claiming it from " + conn->remoteHost() + " is refused";
        return false;
      }
    }
  }
  if (!conn->outgoing()) handshaking_--;  // it is ready from here on
  return true;
}

void TcpProvider::onHandshake(TcpConnection* conn) {
  const std::string node = conn->peerNodeId();
  byNode_[node].push_back(conn);
  // Where to dial this node again after a loss: what it advertises, else where we reached it.
  addressOfNode_[node] = conn->peerListenAddress().empty() ? conn->redialAddress() : conn->peerListenAddress();
  {
    // Known before connect() resolves: under thread progress JS may put by node id at once.
    std::lock_guard<std::mutex> lock(knownMu_);
    known_.insert(node);
  }
  auto r = reconnecting_.find(node);
  if (r == reconnecting_.end()) return;
  if (r->second.incarnation == conn->peerIncarnation()) {
    resume(node);
  } else {
    giveUp(node, Status::PeerLost, "it restarted as a new incarnation");  // the one the puts were for is gone
  }
}

std::shared_ptr<PutWindow> TcpProvider::attachSender(const std::string& node, uint64_t incarnation) {
  return inbound_.attach(node, incarnation);
}

void TcpProvider::onFloor(std::shared_ptr<PutWindow> window, uint64_t floor) {
  for (TcpConnection* stale : window->raiseFloor(floor)) supersede(stale);
  window->dropBelowFloor();
}

void TcpProvider::supersede(TcpConnection* stale) {
  stale->fail(Status::PeerLost, "stale: its sender sent again, or settled, the put it was still writing", false);
}

void TcpProvider::endOfRound(TcpConnection* conn) {
  ctx_.progress.roundDue();
  if (conn->roundPending) return;
  conn->roundPending = true;
  roundPending_.push_back(conn);
}

void TcpProvider::deferAcks(TcpConnection* conn, AckPace pace) {
  (pace == AckPace::Late ? lateAcks_ : lazyAcks_).add(conn);
}

void TcpProvider::unlink(TcpConnection* conn, bool wasReady, bool transient) {
  if (conn->roundPending) {
    roundPending_.erase(std::remove(roundPending_.begin(), roundPending_.end(), conn), roundPending_.end());
    conn->roundPending = false;
  }
  lazyAcks_.remove(conn);
  lateAcks_.remove(conn);
  auto drop = [conn](auto& map, const std::string& key) {
    auto it = map.find(key);
    if (it == map.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), conn), list.end());
    if (list.empty()) map.erase(it);
  };
  drop(byNode_, conn->peerNodeId());
  drop(byAddress_, conn->dialAddress());
  if (!conn->outgoing()) {
    accepted_--;
    if (!wasReady) handshaking_--;
  }
  if (wasReady) inbound_.detach(conn->peerNodeId(), conn->peerIncarnation(), nowMs(), !transient);
  auto it = std::find_if(conns_.begin(), conns_.end(), [conn](auto& c) { return c.get() == conn; });
  if (it != conns_.end()) {
    dead_.push_back(std::move(*it));  // conn stays valid until the next tick
    conns_.erase(it);
  }
}

void TcpProvider::onDead(TcpConnection* conn, bool wasReady, bool transient, Status status, const std::string& why,
                         std::vector<OutPut> unanswered) {
  const std::string& node = conn->peerNodeId();
  const uint64_t incarnation = conn->peerIncarnation();
  if (transient && canKeep(node, incarnation)) {
    keep(node, incarnation, std::move(unanswered), why);
  } else {
    // The loss before the puts it fails (as giveUp).
    if (wasReady && status != Status::Closed) {
      RVMA_DEBUG_LOG("tcp: node \"" + node + "\" lost: " + why);
      ctx_.events.peerLost(node, incarnation, why);
    }
    for (OutPut& p : unanswered) {
      // Never connected, but aimed at a node known before (by incarnation, sent to it before,
      // or redialed to reach it again): that node is gone.
      bool gone = status == Status::NoPeer && (p.req.incarnation != 0 || p.wireId != 0 || !conn->expectedNode().empty());
      // Never connected: say why (refused, timed out, another node answered).
      putFinished(p, gone ? Status::PeerLost : status, wasReady ? std::string() : why);
    }
    // A ready connection to a reconnecting node that died before it took the kept puts (a
    // protocol error, say): the node still waits for another.
    if (wasReady) keepDialing(node);
  }
  if (!wasReady && !conn->expectedNode().empty()) onRedialDead(conn);
}

void TcpProvider::close() {
  closing_ = true;
  // The listener first: peers that see their connections end and dial again are refused.
  if (listenFd_ >= 0) {
    ctx_.progress.remove(listenToken_, listenFd_);
    ::close(listenFd_);
    listenFd_ = -1;
  }
  auto conns = std::move(conns_);  // fail() unlinks from conns_, so walk a detached list
  conns_.clear();
  for (auto& c : conns) c->fail(Status::Closed, "endpoint closed", false);
  while (!reconnecting_.empty()) giveUp(reconnecting_.begin()->first, Status::Closed, "the endpoint closed");
  reconnectTimer_.stop();
  lazyAcks_.stop();
  lateAcks_.stop();
  dead_.clear();
  conns.clear();
  inbound_.clear();  // no connection is left writing: what the windows hold is released
}

}  // namespace rvma
