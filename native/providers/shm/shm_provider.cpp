#include "shm_provider.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>

namespace rvma {

namespace {

bool isAddress(const std::string& peer) { return peer.compare(0, 6, "shm://") == 0; }

uint64_t randomWord() {
  std::random_device rd;
  uint64_t v = (uint64_t(rd()) << 32) ^ rd();
  return v ? v : 1;
}

}  // namespace

ShmProvider::ShmProvider(ProviderContext ctx, ShmOptions options, uint64_t incarnation)
    : ctx_(std::move(ctx)), options_(std::move(options)), incarnation_(incarnation), probe_(randomWord()),
      lazyKicks_(ctx_.progress, kLazyAckDelayMs, [](ShmConnection* c) { c->kickDeferred(); }),
      lateKicks_(ctx_.progress, kLateAckDelayMs, [](ShmConnection* c) { c->kickDeferred(); }),
      housekeeping_(ctx_.progress, [this] { houseKeep(); }),
      lender_(ctx_.regions) {}

ShmProvider::~ShmProvider() { close(); }

uint64_t ShmProvider::nowMs() {
  using namespace std::chrono;
  return uint64_t(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

bool ShmProvider::listen(std::string* error, Status* status) {
  std::string name = options_.name;
  if (name.empty()) {
    char buf[48];
    snprintf(buf, sizeof buf, "rvma-%d-%016llx", int(getpid()), static_cast<unsigned long long>(randomWord()));
    name = buf;
  }
  listenFd_ = shm::listenAbstract(name, error, status);
  if (listenFd_ < 0) return false;
  bound_ = "shm://" + name;
  return true;
}

void ShmProvider::start() {
  if (listenFd_ >= 0) listenToken_ = ctx_.progress.add(listenFd_, EPOLLIN, [this](uint32_t) { onAccept(); });
  lazyKicks_.prepare();
  lateKicks_.prepare();
  housekeeping_.prepare();
  // Both modes: in loop mode the event loop spins (JsWake), calling the same two functions.
  if (options_.busyPollUs) {
    ctx_.progress.busyPoll(options_.busyPollUs, [this] { return pollAll(); }, [this] { return beforeSleepAll(); });
  } else {
    ctx_.progress.beforeSleeping([this] { return beforeSleepAll(); });
  }
}

const std::vector<ShmConnection*>& ShmProvider::snapshot() {
  polling_.clear();
  for (auto& c : conns_) polling_.push_back(c.get());
  return polling_;
}

int ShmProvider::pollAll() {
  int work = 0;
  for (ShmConnection* c : snapshot()) work += c->poll();
  return work;
}

bool ShmProvider::beforeSleepAll() {
  bool worked = false;
  for (ShmConnection* c : snapshot()) worked |= c->beforeSleep();
  return worked;
}

void ShmProvider::awake() {
  for (auto& c : conns_) c->awake();
}

void ShmProvider::onAccept() {
  for (;;) {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pauseAccepting();
      return;  // EAGAIN, or a transient error: the next readiness retries
    }
    conns_.push_back(std::make_unique<ShmConnection>(*this, fd, false, std::string(), nextSerial_++));
    needHousekeeping();  // its handshake has a deadline
    conns_.back()->start(nowMs());
  }
}

void ShmProvider::pauseAccepting() {
  acceptPaused_ = true;
  ctx_.progress.modify(listenToken_, listenFd_, 0);
  needHousekeeping();
}

void ShmProvider::needHousekeeping() {
  if (housekeepingArmed_ || closing_) return;
  housekeepingArmed_ = true;
  housekeeping_.arm(kHousekeepingMs);
}

// What waits for time to pass: dead connections to free, a paused listener, handshakes with a
// deadline. Armed only while there is some (a ring of ready connections sleeps undisturbed).
void ShmProvider::houseKeep() {
  housekeepingArmed_ = false;
  dead_.clear();
  if (acceptPaused_ && listenFd_ >= 0) {
    acceptPaused_ = false;
    ctx_.progress.modify(listenToken_, listenFd_, EPOLLIN);
  }
  uint64_t now = nowMs();
  std::vector<ShmConnection*> live;  // tick() may kill one, which leaves conns_
  for (auto& c : conns_) live.push_back(c.get());
  for (ShmConnection* c : live) c->tick(now);
  for (auto& c : conns_) {
    const auto state = c->state();
    if (state != ShmConnection::State::Ready && state != ShmConnection::State::Dead) needHousekeeping();  // handshaking
  }
  if (!dead_.empty()) needHousekeeping();
}

bool ShmProvider::admits(const std::string& node, uint64_t incarnation, pid_t pid, std::string* why) const {
  auto it = byNode_.find(node);
  if (it == byNode_.end()) return true;
  for (ShmConnection* c : it->second) {
    if (c->peerIncarnation() != incarnation) {
      *why = "node \"" + node + "\" is connected already as another incarnation; a second one is refused while the first lives";
      return false;
    }
    // Its incarnation is no secret, but the kernel names the process at the other end.
    if (c->peerPid() != pid) {
      *why = "node \"" + node + "\" is connected already as process " + std::to_string(c->peerPid()) +
             "; process " + std::to_string(pid) + " claiming it is refused";
      return false;
    }
  }
  return true;
}

bool ShmProvider::reaches(const std::string& peer) {
  if (isAddress(peer)) return true;
  std::lock_guard<std::mutex> lock(knownMu_);
  // A node we dialed is dialed again by the next put to it (it may have restarted there);
  // that put fails PeerLost if nothing answers.
  return known_.count(peer) > 0 || dialed_.count(peer) > 0;
}

Status ShmProvider::dialable(const std::string& address) const {
  if (!isAddress(address)) return Status::NoPeer;
  std::string name;
  return parseShmAddress(address, &name) ? Status::Ok : Status::InvalidArgument;
}

ShmConnection* ShmProvider::dial(const std::string& address, Status* status) {
  auto it = byAddress_.find(address);
  if (it != byAddress_.end()) return it->second;
  std::string name;
  if (!parseShmAddress(address, &name)) {
    *status = Status::InvalidArgument;
    return nullptr;
  }
  int fd = shm::dialAbstract(name);
  if (fd < 0) {
    *status = Status::NoPeer;
    return nullptr;
  }
  conns_.push_back(std::make_unique<ShmConnection>(*this, fd, true, address, nextSerial_++));
  needHousekeeping();  // its handshake has a deadline
  ShmConnection* conn = conns_.back().get();
  byAddress_[address] = conn;
  conn->start(nowMs());
  return conn->state() == ShmConnection::State::Dead ? nullptr : conn;
}

ShmConnection* ShmProvider::route(const std::string& peer, Status* status) {
  if (isAddress(peer)) return dial(peer, status);
  auto it = byNode_.find(peer);
  if (it != byNode_.end() && !it->second.empty()) return it->second.front();
  // Dialed before, and that connection died: the node may still listen there.
  auto addr = addressOfNode_.find(peer);
  if (addr != addressOfNode_.end()) {
    ShmConnection* conn = dial(addr->second, status);
    if (conn && conn->state() != ShmConnection::State::Ready) conn->expectNode(peer);
    if (conn && conn->state() == ShmConnection::State::Ready && conn->peerNodeId() != peer) {
      *status = Status::PeerLost;  // another node answers there now: ours is gone
      return nullptr;
    }
    if (conn) return conn;
    *status = Status::PeerLost;
    return nullptr;
  }
  *status = Status::NoPeer;
  return nullptr;
}

void ShmProvider::put(PutRequest req) {
  Status status = Status::NoPeer;
  ShmConnection* conn = route(*req.peer, &status);
  if (!conn) {
    Status final = status == Status::NoPeer && req.incarnation ? Status::PeerLost : status;
    bool address = isAddress(*req.peer);
    ctx_.events.putSettled(req.id, final, address ? "nothing listens at " + *req.peer : "");
    return;
  }
  conn->put(req);
}

void ShmProvider::connect(uint64_t requestId, const std::string& address) {
  Status status = Status::NoPeer;
  ShmConnection* conn = dial(address, &status);
  if (!conn) {
    ctx_.events.connected(requestId, status, "cannot connect to " + address + ": nothing listens there");
    return;
  }
  if (conn->state() == ShmConnection::State::Ready) {
    ctx_.events.connected(requestId, Status::Ok, conn->peerNodeId());
    return;
  }
  conn->connectRequests().push_back(requestId);
}

void ShmProvider::onReady(ShmConnection* conn) {
  const std::string& node = conn->peerNodeId();
  byNode_[node].push_back(conn);
  if (conn->dialer()) addressOfNode_[node] = conn->address();
  {
    // Known before connect() resolves: under thread progress JS may put by node id at once.
    std::lock_guard<std::mutex> lock(knownMu_);
    known_[node] = conn->largePuts();
    if (conn->dialer()) dialed_.insert(node);
  }
  for (uint64_t request : conn->connectRequests()) ctx_.events.connected(request, Status::Ok, node);
  conn->connectRequests().clear();
}

void ShmProvider::onDead(ShmConnection* conn, bool wasReady, Status status, const std::string& why) {
  const std::string node = conn->peerNodeId();
  lender_.holderGone(conn->serial());  // it writes nothing more
  lazyKicks_.remove(conn);
  lateKicks_.remove(conn);
  if (wasReady) {
    auto it = byNode_.find(node);
    if (it != byNode_.end()) {
      auto& list = it->second;
      list.erase(std::remove(list.begin(), list.end(), conn), list.end());
      if (list.empty()) {
        byNode_.erase(it);
        std::lock_guard<std::mutex> lock(knownMu_);
        known_.erase(node);
      } else {
        std::lock_guard<std::mutex> lock(knownMu_);
        known_[node] = list.front()->largePuts();
      }
    }
  }
  auto addr = byAddress_.find(conn->address());
  if (addr != byAddress_.end() && addr->second == conn) byAddress_.erase(addr);
  // A refused authentication is final: no put to the node dials that address again.
  if (status == Status::Auth && conn->dialer()) forgetAddress(conn->address());
  for (uint64_t request : conn->connectRequests()) {
    const bool final = status == Status::Closed || status == Status::Auth;
    ctx_.events.connected(request, final ? status : Status::NoPeer, "cannot connect to " + conn->address() + ": " + why);
  }
  conn->connectRequests().clear();
  auto it = std::find_if(conns_.begin(), conns_.end(), [conn](auto& c) { return c.get() == conn; });
  if (it != conns_.end()) {
    dead_.push_back(std::move(*it));  // conn stays valid until the next housekeeping
    conns_.erase(it);
    needHousekeeping();
  }
}

void ShmProvider::forgetAddress(const std::string& address) {
  for (auto it = addressOfNode_.begin(); it != addressOfNode_.end();) {
    if (it->second != address) {
      ++it;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(knownMu_);
      dialed_.erase(it->first);
    }
    it = addressOfNode_.erase(it);
  }
}

void ShmProvider::regionClosed(uint64_t key) {
  std::vector<ShmConnection*> holders;  // revoke() may kill one, which leaves conns_
  for (uint64_t holder : lender_.revoke(key)) {
    for (auto& c : conns_) {
      if (c->serial() == holder) holders.push_back(c.get());
    }
  }
  for (ShmConnection* c : holders) c->revoke(key);
}

void ShmProvider::describePeers(std::vector<PeerInfo>* out) {
  std::lock_guard<std::mutex> lock(knownMu_);
  for (const auto& [node, largePuts] : known_) out->push_back(PeerInfo{node, "shm", largePuts});
}

void ShmProvider::onLargePutsChanged(ShmConnection* conn) {
  auto it = byNode_.find(conn->peerNodeId());
  if (it == byNode_.end() || it->second.front() != conn) return;
  std::lock_guard<std::mutex> lock(knownMu_);
  known_[conn->peerNodeId()] = conn->largePuts();
}

void ShmProvider::deferKick(ShmConnection* conn, AckPace pace) {
  (pace == AckPace::Late ? lateKicks_ : lazyKicks_).add(conn);
}

void ShmProvider::close() {
  if (closing_) return;
  closing_ = true;
  lazyKicks_.stop();
  lateKicks_.stop();
  housekeeping_.stop();
  if (listenFd_ >= 0) {
    ctx_.progress.remove(listenToken_, listenFd_);
    ::close(listenFd_);
    listenFd_ = -1;
  }
  std::vector<ShmConnection*> live;
  for (auto& c : conns_) live.push_back(c.get());
  for (ShmConnection* c : live) c->fail(Status::Closed, "endpoint closed", false);
  conns_.clear();
  dead_.clear();
  lender_.clear();
}

}  // namespace rvma
