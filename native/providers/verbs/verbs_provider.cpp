#include "verbs_provider.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>

namespace rvma {

namespace {

bool setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

uint32_t activePorts(ibv_context* ctx) {
  ibv_device_attr attr{};
  if (ibv_query_device(ctx, &attr) != 0) return 0;
  uint32_t active = 0;
  for (uint8_t port = 1; port <= attr.phys_port_cnt; port++) {
    ibv_port_attr pattr{};
    if (ibv_query_port(ctx, port, &pattr) == 0 && pattr.state == IBV_PORT_ACTIVE) active++;
  }
  return active;
}

}  // namespace

VerbsProvider::VerbsProvider(ProviderContext ctx, VerbsOptions options, uint64_t incarnation)
    : ctx_(std::move(ctx)), options_(std::move(options)), incarnation_(incarnation) {}

VerbsProvider::~VerbsProvider() { close(); }

bool VerbsProvider::open(std::string* error, Status* status) {
  const std::string hint = " (Endpoint.capabilities.devices lists the RDMA devices and their active ports)";
  int count = 0;
  devices_.reset(rdma_get_devices(&count));
  if (!devices_ || count == 0) {
    *error = "provider 'verbs' needs an RDMA device, and none was found" + hint;
    return false;
  }
  channel_.reset(rdma_create_event_channel());
  if (!channel_ || !setNonBlocking(channel_->fd)) {
    *error = std::string("cannot open the RDMA connection manager (/dev/infiniband/rdma_cm): ") + std::strerror(errno);
    return false;
  }
  if (!options_.listen.empty()) {
    std::string host;
    uint16_t port;
    sockaddr_storage addr{};
    socklen_t addrLen = 0;
    if (!parseRdmaAddress(options_.listen, &host, &port)) {
      *error = "listen address must look like rdma://IP:PORT, got \"" + options_.listen + "\"";
      return false;
    }
    if (!resolveAddress(host, port, &addr, &addrLen, error)) return false;
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0) {
      *error = std::string("rdma_create_id: ") + std::strerror(errno);
      return false;
    }
    listenId_.reset(id);
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&addr)) != 0 || rdma_listen(id, 128) != 0) {
      *error = "cannot listen on " + options_.listen + ": " + std::strerror(errno) +
               (errno == EADDRNOTAVAIL || errno == ENODEV ? " (is that address on an RDMA device's netdev?)" : "");
      *status = listenFailure(errno);
      return false;
    }
    listenPort_ = ntohs(rdma_get_src_port(id));
    bound_ = "rdma://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(listenPort_);
    device_ = id->verbs;  // bound to one device's address: that device; a wildcard leaves it open
  }
  if (!device_) {
    for (int i = 0; i < count && !device_; i++) {
      if (activePorts(devices_.get()[i])) device_ = devices_.get()[i];
    }
  }
  if (!device_ || !activePorts(device_)) {
    *error = "provider 'verbs' needs an RDMA device with an ACTIVE port, and none has one" + hint;
    return false;
  }
  ibv_device_attr attr{};
  if (ibv_query_device(device_, &attr) != 0) {
    *error = std::string("ibv_query_device: ") + std::strerror(errno);
    return false;
  }
  readDepth_ = uint32_t(std::max(1, std::min({attr.max_qp_rd_atom, attr.max_qp_init_rd_atom, 16})));
  maxCqe_ = attr.max_cqe;
  pd_.reset(ibv_alloc_pd(device_));
  compChannel_.reset(pd_ ? ibv_create_comp_channel(device_) : nullptr);
  if (!pd_ || !compChannel_ || !setNonBlocking(compChannel_->fd)) {
    *error = std::string("cannot set up the RDMA device: ") + std::strerror(errno);
    return false;
  }
  // The completion queue must hold every posted receive and every connection's sends: it
  // starts with room for one connection and grows as more come (roomForConnection).
  const int64_t sendDepth = VerbsConnection::sendDepth(options_.slots);
  const int64_t depth = std::max<int64_t>(1, std::min<int64_t>({options_.receiveDepth, attr.max_srq_wr, maxCqe_ - sendDepth}));
  srq_ = verbs::SharedReceiveQueue::create(pd_.get(), uint32_t(depth), error, status);
  if (!srq_) return false;
  cq_.reset(ibv_create_cq(device_, int(std::min<int64_t>(maxCqe_, depth + sendDepth)), nullptr, compChannel_.get(), 0));
  if (!cq_ || ibv_req_notify_cq(cq_.get(), 0) != 0) {
    *error = std::string("cannot create a completion queue: ") + std::strerror(errno);
    return false;
  }
  registrations_ = std::make_unique<verbs::RegistrationCache>(pd_.get(), options_.registrationCacheBytes, counters_);
  lender_ = std::make_unique<RegionLender>(ctx_.regions, verbs::registerForRemoteWrites(pd_.get()));
  return true;
}

void VerbsProvider::start() {
  ctx_.progress.atRoundEnd([this] { endRound(); });
  cmToken_ = ctx_.progress.add(channel_->fd, EPOLLIN, [this](uint32_t) { onCmEvents(); });
  cqToken_ = ctx_.progress.add(compChannel_->fd, EPOLLIN, [this](uint32_t) { onCompletions(); });
  if (ctx_.progress.mode() == ProgressMode::Loop) {
    moreFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (moreFd_ >= 0) {
      moreToken_ = ctx_.progress.add(moreFd_, EPOLLIN, [this](uint32_t) {
        uint64_t count;
        while (read(moreFd_, &count, sizeof count) > 0) {
        }
        reap();
        if (!closed_) pollCompletions();
      });
    }
  }
  // Busy polling: the worker polls the CQ itself between events; it needs a completion event
  // (ibv_req_notify_cq) only when it is about to sleep, and checks once more after asking.
  if (ctx_.progress.mode() == ProgressMode::Thread && options_.busyPollUs) {
    busyPolling_ = true;
    ctx_.progress.busyPoll(
        options_.busyPollUs,
        [this] {
          reap();
          return closed_ ? 0 : pollCompletions();
        },
        [this] {
          if (closed_) return false;
          ibv_req_notify_cq(cq_.get(), 0);
          pollCompletions();
          return false;  // the worker, not JS, handles what that found
        });
  }
  uint32_t interval = std::max<uint32_t>(10, std::min(options_.keepaliveMs, options_.peerTimeoutMs) / 2);
  tickGap_ = TickGap(interval, nowMs());
  ctx_.progress.every(interval, [this] { tick(); });
}

uint64_t VerbsProvider::nowMs() {
  using namespace std::chrono;
  return uint64_t(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

void VerbsProvider::tick() {
  reap();
  if (closed_) return;
  uint64_t now = nowMs();
  uint64_t missed = tickGap_.missed(now);
  // tick() may kill a connection, which removes it from conns_: iterate over a copy.
  std::vector<VerbsConnection*> live;
  for (auto& [id, c] : conns_) live.push_back(c.get());
  for (VerbsConnection* c : live) c->tick(now, missed);
}

bool VerbsProvider::reaches(const std::string& peer) {
  if (peer.compare(0, 7, "rdma://") == 0) return true;
  std::lock_guard<std::mutex> lock(knownMu_);
  return known_.count(peer) > 0;
}

VerbsConnection* VerbsProvider::find(uint32_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

VerbsConnection* VerbsProvider::dial(const std::string& address, Status* status) {
  std::string host, error;
  uint16_t port;
  sockaddr_storage addr{};
  socklen_t addrLen = 0;
  if (!parseRdmaAddress(address, &host, &port)) {
    *status = Status::InvalidArgument;
    return nullptr;
  }
  if (!resolveAddress(host, port, &addr, &addrLen, &error) || !roomForConnection()) {
    *status = Status::NoPeer;
    return nullptr;
  }
  uint32_t cid = nextConn_++;
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel_.get(), &id, reinterpret_cast<void*>(uintptr_t(cid)), RDMA_PS_TCP) != 0) {
    *status = Status::NoPeer;
    return nullptr;
  }
  auto conn = std::make_unique<VerbsConnection>(*this, cid, verbs::CmIdPtr(id), true, address);
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&addr), 2000) != 0) {
    *status = Status::NoPeer;
    return nullptr;
  }
  VerbsConnection* raw = conn.get();
  conns_.emplace(cid, std::move(conn));
  byAddress_[address] = raw;
  return raw;
}

VerbsConnection* VerbsProvider::route(const std::string& peer, Status* status) {
  if (peer.compare(0, 7, "rdma://") == 0) {
    auto it = byAddress_.find(peer);
    return it != byAddress_.end() ? it->second : dial(peer, status);
  }
  auto it = byNode_.find(peer);
  if (it != byNode_.end() && !it->second.empty()) return it->second.front();
  // A node we dialed before is dialed again where it listened.
  auto known = addressOfNode_.find(peer);
  if (known == addressOfNode_.end()) {
    *status = Status::NoPeer;
    return nullptr;
  }
  auto dialed = byAddress_.find(known->second);
  if (dialed != byAddress_.end()) return dialed->second;
  VerbsConnection* conn = dial(known->second, status);
  if (!conn) *status = Status::PeerLost;  // it existed, and cannot be reached any more
  else conn->expect(peer);
  return conn;
}

void VerbsProvider::put(PutRequest req) {
  reap();
  if (closed_) {
    ctx_.events.putSettled(req.id, Status::Closed);
    return;
  }
  Status status = Status::NoPeer;
  VerbsConnection* conn = route(*req.peer, &status);
  if (!conn) {
    ctx_.events.putSettled(req.id, status == Status::NoPeer && req.incarnation ? Status::PeerLost : status);
    return;
  }
  conn->put(req);
}

Status VerbsProvider::dialable(const std::string& address) const {
  if (address.compare(0, 7, "rdma://") != 0) return Status::NoPeer;
  std::string host;
  uint16_t port;
  return parseRdmaAddress(address, &host, &port) ? Status::Ok : Status::InvalidArgument;
}

bool VerbsProvider::registrationStats(uint64_t out[4]) const {
  out[0] = counters_.registered;
  out[1] = counters_.reused;
  out[2] = counters_.evicted;
  out[3] = counters_.cachedBytes;
  return true;
}

void VerbsProvider::connect(uint64_t requestId, const std::string& address) {
  reap();
  Status status = Status::NoPeer;
  VerbsConnection* conn = closed_ ? nullptr : route(address, &status);
  if (!conn) {
    ctx_.events.connected(requestId, closed_ ? Status::Closed : status, "cannot connect to " + address);
  } else if (conn->state() == VerbsConnection::State::Ready) {
    ctx_.events.connected(requestId, Status::Ok, conn->peerNodeId());
  } else {
    conn->addConnectRequest(requestId);
  }
}

// Holders confirm the revoke before the registration goes (see RegionLender).
// Ends the round of every connection that has work for it; one that dies meanwhile is skipped.
void VerbsProvider::endRound() {
  roundEnding_.swap(roundDue_);  // both keep their capacity: no allocation per round
  for (uint32_t id : roundEnding_) {
    if (VerbsConnection* c = find(id)) c->endRound();
  }
  roundEnding_.clear();
}

// Not within a round under loop progress (JS closes the region): the revokes leave now.
void VerbsProvider::regionClosed(uint64_t key) {
  if (closed_) return;
  for (uint64_t holder : lender_->revoke(key)) {
    if (VerbsConnection* c = find(uint32_t(holder))) c->revoke(key);
    else lender_->returned(key, holder);
  }
  endRound();
}

void VerbsProvider::memoryGone(uint64_t memory) {
  if (!closed_) registrations_->forget(memory);
}

namespace {
// Refuses a connection request, telling the dialer why (RejectMsg).
void reject(rdma_cm_id* id, Status status, const std::string& why) {
  verbs::RejectMsg m{verbs::kMagic, uint16_t(status), uint16_t(std::min(why.size(), sizeof m.text)), {}};
  std::memcpy(m.text, why.data(), m.textLen);
  rdma_reject(id, &m, sizeof m);
}
}  // namespace

void VerbsProvider::onConnectRequest(rdma_cm_id* id) {
  if (closed_ || id->verbs != device_ || !roomForConnection()) {
    reject(id, Status::NoPeer,
           closed_                  ? "the endpoint is closing"
           : id->verbs != device_   ? "it reached another RDMA device of the endpoint"
                                    : "the endpoint has no room for more connections");
    rdma_destroy_id(id);
    return;
  }
  uint32_t cid = nextConn_++;
  id->context = reinterpret_cast<void*>(uintptr_t(cid));
  auto conn = std::make_unique<VerbsConnection>(*this, cid, verbs::CmIdPtr(id), false, std::string());
  std::string error;
  rdma_conn_param param{};
  Status s = conn->setup(&error);
  if (!ok(s) || (param = conn->connParam(), rdma_accept(id, &param) != 0)) {
    if (error.empty()) error = std::string("rdma_accept: ") + std::strerror(errno);
    reject(id, ok(s) ? Status::NoPeer : s, error);
    ctx_.events.protocolError("rdma peer", "cannot accept a connection: " + error);
    return;  // conn's destructor destroys the id
  }
  conn->setState(VerbsConnection::State::Connecting);
  conns_.emplace(cid, std::move(conn));
}

// rdma_cm events: each is copied and acknowledged first, so a handler may destroy its id.
void VerbsProvider::onCmEvents() {
  reap();
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (closed_ || rdma_get_cm_event(channel_.get(), &ev) != 0) return;
    rdma_cm_event_type type = ev->event;
    rdma_cm_id* id = ev->id;
    verbs::RejectMsg why{};
    if (type == RDMA_CM_EVENT_REJECTED && ev->param.conn.private_data_len >= sizeof why) {
      std::memcpy(&why, ev->param.conn.private_data, sizeof why);
    }
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      onConnectRequest(id);
      continue;
    }
    if (listenId_ && id == listenId_.get()) continue;
    VerbsConnection* c = find(uint32_t(uintptr_t(id->context)));
    if (!c || c->state() == VerbsConnection::State::Dead) continue;
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (id->verbs != device_) {
          c->fail(Status::NoPeer, c->address() + " is not reached through this endpoint's RDMA device");
        } else if (rdma_resolve_route(id, 2000) != 0) {
          c->fail(Status::NoPeer, std::string("rdma_resolve_route: ") + std::strerror(errno));
        }
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        std::string error;
        Status s = c->setup(&error);
        if (!ok(s)) {
          c->fail(s, error);
          break;
        }
        rdma_conn_param param = c->connParam();
        if (rdma_connect(id, &param) != 0) {
          c->fail(Status::NoPeer, std::string("rdma_connect: ") + std::strerror(errno));
        } else {
          c->setState(VerbsConnection::State::Connecting);
        }
        break;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        c->onEstablished();
        break;
      case RDMA_CM_EVENT_REJECTED:
        // The acceptor's reason, when it gave one we know.
        if (why.magic == verbs::kMagic &&
            (why.status == uint16_t(Status::Registration) || why.status == uint16_t(Status::NoPeer))) {
          std::string text(why.text, std::min<size_t>(why.textLen, sizeof why.text));
          c->fail(Status(why.status),
                  "connection to " + c->address() + " refused by the peer: " + text +
                      (why.status == uint16_t(Status::Registration)
                           ? " (raise the peer's locked-memory limit: ulimit -l, or memlock in /etc/security/limits.conf)"
                           : ""));
          break;
        }
        [[fallthrough]];
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_CONNECT_ERROR:
        c->fail(c->state() == VerbsConnection::State::Ready ? Status::PeerLost : Status::NoPeer,
                std::string("connection to ") + (c->address().empty() ? "peer" : c->address()) + ": " +
                    rdma_event_str(type));
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        // In the handshake the peer's last messages say why it hung up (its hello or proof
        // failed ours): they are read first, not lost to the race between the two channels.
        if (c->state() != VerbsConnection::State::Ready) {
          const uint32_t cid = c->id();
          drainCompletions();
          c = find(cid);
          if (!c || c->state() == VerbsConnection::State::Dead) break;
        }
        c->fail(Status::PeerLost, rdma_event_str(type));
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        c->fail(Status::PeerLost, rdma_event_str(type));
        break;
      default:
        break;
    }
  }
}

// Drains the channel, re-arms, then polls: a completion arriving after the poll re-signals.
void VerbsProvider::onCompletions() {
  reap();
  if (closed_) return;
  ibv_cq* evCq;
  void* evCtx;
  unsigned events = 0;
  while (ibv_get_cq_event(compChannel_.get(), &evCq, &evCtx) == 0) events++;
  if (events) ibv_ack_cq_events(cq_.get(), events);
  if (!busyPolling_) ibv_req_notify_cq(cq_.get(), 0);  // busy polling asks again before the thread sleeps
  pollCompletions();
}

// Under loop progress at most kLoopCompletionBudget per callback, so completions reach JS,
// and buffers get re-posted, between batches (as the tcp provider bounds its reads); a
// receiver then needs few posted buffers to keep up with a fast sender. The worker thread
// drains the queue.
int VerbsProvider::pollCompletions() {
  constexpr int kLoopCompletionBudget = 16;
  int budget = moreFd_ >= 0 ? kLoopCompletionBudget : std::numeric_limits<int>::max();
  int handled = 0;
  ibv_wc wc[32];
  while (budget > 0) {
    int n = ibv_poll_cq(cq_.get(), std::min(32, budget), wc);
    if (n <= 0) return handled;
    budget -= n;
    handled += n;
    for (int i = 0; i < n; i++) {
      if (verbs::SharedReceiveQueue::isReceive(wc[i].wr_id)) {
        onReceive(wc[i]);
      } else if (VerbsConnection* c = find(uint32_t(wc[i].wr_id >> 32))) {
        c->onCompletion(wc[i]);  // a connection already gone (flushed work) finds nothing
      }
    }
  }
  if (moreFd_ < 0) return handled;
  uint64_t one = 1;
  (void)!write(moreFd_, &one, sizeof one);  // the rest on the next turn of the loop
  return handled;
}

// Handles what the completion queue holds now (bounded: a busy queue does not starve the
// caller).
void VerbsProvider::drainCompletions() {
  for (int round = 0; round < 64 && !closed_ && pollCompletions() > 0; round++) {
  }
}

// Every receive gives its buffer back, whatever became of its queue pair (an error status is
// a flush); a control message is copied out first, so the buffer takes the next message at
// once. A queue pair destroyed before its completions were polled finds no connection.
void VerbsProvider::onReceive(const ibv_wc& wc) {
  const uint32_t buffer = verbs::SharedReceiveQueue::bufferOf(wc.wr_id);
  uint8_t msg[verbs::kCtrlBytes];
  uint32_t len = 0;
  if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV) {
    len = std::min(wc.byte_len, verbs::kCtrlBytes);
    std::memcpy(msg, srq_->data(buffer), len);
  }
  srq_->repost(buffer);
  auto it = qpConns_.find(wc.qp_num);
  if (it == qpConns_.end()) return;
  if (VerbsConnection* c = find(it->second)) c->onReceive(wc, msg, len);
}

// The completion queue holds the shared receive queue's completions and every connection's
// sends: one more connection needs its send depth on top. Grown (doubling, up to the device's
// max_cqe) when short; beyond that, no more connections.
bool VerbsProvider::roomForConnection() {
  const int64_t need = srq_->depth() + int64_t(conns_.size() + 1) * VerbsConnection::sendDepth(options_.slots);
  if (need <= cq_->cqe) return true;
  if (need > maxCqe_) return false;
  const int64_t size = std::min<int64_t>(maxCqe_, std::max<int64_t>(need, int64_t(cq_->cqe) * 2));
  return ibv_resize_cq(cq_.get(), int(size)) == 0 && need <= cq_->cqe;
}

void VerbsProvider::onReady(VerbsConnection* conn) {
  byNode_[conn->peerNodeId()].push_back(conn);
  // Where to dial the node again once this connection is gone: where we reached it, or where
  // it said it listens.
  std::string again = conn->outgoing() ? conn->address() : conn->peerListenAddress();
  if (!again.empty()) addressOfNode_[conn->peerNodeId()] = again;
  std::lock_guard<std::mutex> lock(knownMu_);
  known_.insert(conn->peerNodeId());
}

void VerbsProvider::onDead(VerbsConnection* conn) {
  auto a = byAddress_.find(conn->address());
  if (a != byAddress_.end() && a->second == conn) byAddress_.erase(a);
  auto n = byNode_.find(conn->peerNodeId());
  if (n != byNode_.end()) {
    auto& list = n->second;
    list.erase(std::remove(list.begin(), list.end(), conn), list.end());
    if (list.empty()) byNode_.erase(n);
  }
  auto it = conns_.find(conn->id());
  if (it != conns_.end()) {
    dead_.push_back(std::move(it->second));
    conns_.erase(it);
  }
}

// Runs after progress stopped: nothing else touches the provider now.
void VerbsProvider::close() {
  if (closed_) return;
  closed_ = true;
  if (cmToken_) ctx_.progress.remove(cmToken_, channel_->fd);
  if (cqToken_) ctx_.progress.remove(cqToken_, compChannel_->fd);
  if (moreToken_) ctx_.progress.remove(moreToken_, moreFd_);
  if (moreFd_ >= 0) ::close(moreFd_);
  moreFd_ = -1;
  auto conns = std::move(conns_);
  conns_.clear();
  for (auto& [id, c] : conns) c->fail(Status::Closed, "endpoint closed");
  conns.clear();
  dead_.clear();
  byAddress_.clear();
  byNode_.clear();
  addressOfNode_.clear();
  listenId_.reset();
  lender_.reset();
  registrations_.reset();
  srq_.reset();
  cq_.reset();
  compChannel_.reset();
  pd_.reset();
  channel_.reset();
  devices_.reset();
}

}  // namespace rvma
