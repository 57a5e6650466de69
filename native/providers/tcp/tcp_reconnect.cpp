// TcpProvider, sender side of a broken connection. The puts it had not got answers for are
// kept for the peer node and sent again, whole and with the same put ids (a part: the same
// part), over a new connection to the same incarnation: at once over another ready
// connection to it, else once one is dialed (the node's known address, with a short
// backoff) and ready, within tcp.reconnectMs. The node is lost, and its puts fail with
// PeerLost, when the bound passes, another incarnation (or node) answers, or the dial is
// refused outright: nothing listens there, so the process is gone.
#include <algorithm>

#include "tcp_provider.h"

#include "../../core/debug_log.h"

namespace rvma {
namespace {
constexpr uint32_t kFirstBackoffMs = 10;
constexpr uint32_t kMaxBackoffMs = 250;
}  // namespace

bool TcpProvider::canKeep(const std::string& node, uint64_t incarnation) const {
  if (options_.reconnectMs == 0 || closing_) return false;
  auto addr = addressOfNode_.find(node);
  return (addr != addressOfNode_.end() && !addr->second.empty()) || !readyOf(node, incarnation).empty();
}

void TcpProvider::keep(const std::string& node, uint64_t incarnation, std::vector<OutPut> puts, const std::string& why) {
  if (!readyOf(node, incarnation).empty()) {
    for (OutPut& p : puts) resendKept(node, incarnation, std::move(p));
    topUp(node);
    return;
  }
  auto it = reconnecting_.find(node);
  if (it != reconnecting_.end() && it->second.incarnation != incarnation) {
    giveUp(node, Status::PeerLost, "it restarted as a new incarnation");
    it = reconnecting_.end();
  }
  bool fresh = it == reconnecting_.end();
  if (fresh) {
    Reconnect r;
    r.incarnation = incarnation;
    r.deadlineMs = nowMs() + options_.reconnectMs;
    r.broke = why;
    it = reconnecting_.emplace(node, std::move(r)).first;
  }
  for (OutPut& p : puts) it->second.puts.push_back(std::move(p));
  // A connection of an attempt that died once ready (before its puts were resumed) is a
  // failed attempt like any other.
  if (fresh) {
    RVMA_DEBUG_LOG("tcp: node \"" + node + "\" disconnected (" + why + "): reconnecting for up to " + std::to_string(options_.reconnectMs) + " ms");
    redial(node);
  } else {
    keepDialing(node);
  }
  armReconnectTimer();
}

// Over a ready connection of the incarnation; if none is left (sending may break one), the
// put is kept again.
void TcpProvider::resendKept(const std::string& node, uint64_t incarnation, OutPut p) {
  std::vector<TcpConnection*> ready = readyOf(node, incarnation);
  if (ready.empty()) {
    std::vector<OutPut> one;
    one.push_back(std::move(p));
    if (canKeep(node, incarnation)) {
      keep(node, incarnation, std::move(one), "sending broke the last connection");
    } else {
      putFinished(one.front(), closing_ ? Status::Closed : Status::PeerLost);
    }
    return;
  }
  dispatch(ready, std::move(p));
}

void TcpProvider::redial(const std::string& node) {
  auto it = reconnecting_.find(node);
  if (it == reconnecting_.end()) return;
  auto addr = addressOfNode_.find(node);
  if (addr == addressOfNode_.end() || addr->second.empty()) {
    giveUp(node, Status::PeerLost, "its address is unknown");
    return;
  }
  Status status = Status::NoPeer;
  bool refused = false;
  RVMA_DEBUG_LOG("tcp: redialing node \"" + node + "\" at " + addr->second);
  std::vector<TcpConnection*> group = dial(addr->second, &status, &refused);
  if (group.empty()) {
    // Refused: nothing listens there. An address that does not parse never will.
    if (refused || status == Status::InvalidArgument) {
      giveUp(node, Status::PeerLost, addr->second + " refused a new one");
    } else {
      retryLater(node);
    }
    return;
  }
  for (TcpConnection* conn : group) {
    if (conn->state() != TcpConnection::State::Ready) {
      conn->expectNode(node);
      continue;
    }
    // Already ready there: ours again, or whoever answers at that address now.
    if (conn->peerNodeId() == node && conn->peerIncarnation() == it->second.incarnation) {
      resume(node);
    } else {
      giveUp(node, Status::PeerLost, "another node answers at " + addr->second);
    }
    return;
  }
}

bool TcpProvider::dialPending(const std::string& node) const {
  auto addr = addressOfNode_.find(node);
  if (addr == addressOfNode_.end()) return false;
  auto group = byAddress_.find(addr->second);
  return group != byAddress_.end() &&
         std::any_of(group->second.begin(), group->second.end(),
                     [](TcpConnection* c) { return c->state() != TcpConnection::State::Ready; });
}

void TcpProvider::keepDialing(const std::string& node) {
  auto it = reconnecting_.find(node);
  if (it != reconnecting_.end() && it->second.retryAtMs == 0 && !dialPending(node)) retryLater(node);
}

// A connection dialed for a node died before its handshake completed.
void TcpProvider::onRedialDead(TcpConnection* conn) {
  const std::string node = conn->expectedNode();
  if (!reconnecting_.count(node)) return;
  if (conn->refused() || conn->wrongNode() || conn->authRefused()) {
    const char* why = conn->authRefused() ? "authentication was refused" : conn->refused() ? "the address refused" : "another node answered";
    giveUp(node, conn->authRefused() ? Status::Auth : Status::PeerLost, std::string("reconnecting failed: ") + why);
    return;
  }
  keepDialing(node);
}

void TcpProvider::retryLater(const std::string& node) {
  Reconnect& r = reconnecting_.at(node);
  r.backoffMs = r.backoffMs == 0 ? kFirstBackoffMs : std::min(2 * r.backoffMs, kMaxBackoffMs);
  r.retryAtMs = nowMs() + r.backoffMs;
  armReconnectTimer();
}

// A connection to the same incarnation is ready: the kept puts go (first, in the order they
// were kept), and the node is no longer reconnecting.
void TcpProvider::resume(const std::string& node) {
  auto it = reconnecting_.find(node);
  if (it == reconnecting_.end()) return;
  Reconnect r = std::move(it->second);
  reconnecting_.erase(it);
  RVMA_DEBUG_LOG("tcp: node \"" + node + "\" reconnected; " + std::to_string(r.puts.size()) + " kept puts go again");
  for (OutPut& p : r.puts) resendKept(node, r.incarnation, std::move(p));
  armReconnectTimer();
}

void TcpProvider::giveUp(const std::string& node, Status status, const std::string& why) {
  auto it = reconnecting_.find(node);
  if (it == reconnecting_.end()) return;
  RVMA_DEBUG_LOG("tcp: gave up reconnecting to node \"" + node + "\": " + why);
  Reconnect r = std::move(it->second);
  reconnecting_.erase(it);
  // The loss first, then the puts it fails: a listener that acts on the loss (a ring failing its
  // generation, say) learns why before the first rejection, whichever batch carries each.
  if (status != Status::Closed) {
    ctx_.events.peerLost(node, r.incarnation, "its connection broke" + (r.broke.empty() ? std::string() : " (" + r.broke + ")") + " and " + why);
  }
  for (OutPut& p : r.puts) putFinished(p, status);
  armReconnectTimer();
}

void TcpProvider::onReconnectTimer() {
  uint64_t now = nowMs();
  std::vector<std::string> lost, due;
  for (auto& [node, r] : reconnecting_) {
    if (now >= r.deadlineMs) {
      lost.push_back(node);
    } else if (r.retryAtMs != 0 && now >= r.retryAtMs) {
      r.retryAtMs = 0;
      due.push_back(node);
    }
  }
  for (const std::string& node : lost) {
    giveUp(node, Status::PeerLost, "no new one came within " + std::to_string(options_.reconnectMs) + " ms");
  }
  for (const std::string& node : due) redial(node);
  armReconnectTimer();
}

void TcpProvider::armReconnectTimer() {
  if (closing_) return;
  uint64_t next = UINT64_MAX;
  for (auto& [node, r] : reconnecting_) {
    next = std::min(next, r.deadlineMs);
    if (r.retryAtMs != 0) next = std::min(next, r.retryAtMs);
  }
  if (next == UINT64_MAX) {
    reconnectTimer_.disarm();
    return;
  }
  uint64_t now = nowMs();
  reconnectTimer_.arm(next > now ? next - now : 0);
}

}  // namespace rvma
