// TCP transport: a listening socket and, per peer, one or more connections ("stripes"),
// all on the endpoint's progress context. The JS thread only asks reaches() (locked);
// everything else runs as progress tasks. Large puts are split into offset-addressed parts
// across a peer's connections; the receiver counts the put once its last part landed.
// Puts survive a broken connection: those not answered yet are kept for the peer and sent
// again, with the same put ids, over a new connection to the same incarnation of it
// (tcp_reconnect.cpp); the receiver recognises what it already placed (PutWindow).
#pragma once
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../provider.h"
#include "../tick_gap.h"
#include "inbound_senders.h"
#include "sent_puts.h"
#include "tcp_connection.h"
#include "tcp_options.h"
#include "tcp_put.h"
#include "../deferred_set.h"
#include "../one_shot_timer.h"

namespace rvma {

class TcpProvider final : public Provider {
 public:
  TcpProvider(ProviderContext ctx, TcpOptions options, uint64_t incarnation);
  ~TcpProvider() override;

  // Binds the listen address (if any) before progress starts. Error text on failure.
  bool listen(std::string* error, Status* status);
  std::string boundAddress() const override { return bound_; }
  void start() override;  // registers the listener and the keepalive timer (progress context)

  const char* name() const override { return "tcp"; }
  bool reaches(const std::string& peer) override;
  bool supportsRaw() const override { return true; }
  // Gathered puts go out in one writev; the parts of a split one each take their slices.
  bool gathers(const PutRequest&) const override { return true; }
  void put(PutRequest req) override;
  Status dialable(const std::string& address) const override;
  void connect(uint64_t requestId, const std::string& address) override;
  void describePeers(std::vector<PeerInfo>* out) override;
  // Takes a connected stream socket as if it had been accepted (progress context): the
  // libFuzzer harness feeds connections through socketpairs this way.
  void adopt(int fd, const std::string& from);
  void close() override;

  // For connections.
  ProviderContext& ctx() { return ctx_; }
  const TcpOptions& options() const { return options_; }
  // Our hello on connection fd: a wildcard listen address is advertised as the local
  // address the peer reached us on.
  wire::Hello hello(int fd) const;
  // Whether conn, its handshake done, may become ready as the (node, incarnation) it claims:
  // not while another incarnation of that node is connected (*why says so). Without auth an
  // id is only a claim, but the first claimant keeps it while it lives.
  bool admit(TcpConnection* conn, std::string* why);
  void onHandshake(TcpConnection* conn);
  // conn has frames or answers to send at the end of this progress round.
  void endOfRound(TcpConnection* conn);
  // conn holds acks of this pace (Lazy or Late): they go at the latest when its timer fires.
  void deferAcks(TcpConnection* conn, AckPace pace);
  // conn died: it leaves every route at once (its puts are reported after).
  void unlink(TcpConnection* conn, bool wasReady, bool transient);
  // conn died, and its answered puts are reported. A transient failure (a ready connection lost to the transport) keeps its
  // unanswered puts for the peer if it can be reached again; otherwise they fail with status.
  void onDead(TcpConnection* conn, bool wasReady, bool transient, Status status, const std::string& why,
              std::vector<OutPut> unanswered);
  // Routes a put (again): to a ready connection, behind a reconnect, or to its failure.
  void send(OutPut p);
  // A put (or one part of a split put) got its answer and its bytes left the send queue, or
  // it failed: reported upward once the whole put is settled.
  // reason: why it failed, when a connection could not be made.
  void putFinished(const OutPut& p, Status status, const std::string& reason = std::string());
  SentPuts& sentPuts() { return sent_; }
  // Receiver side: the window of what (node, incarnation) sent us, for a new connection of it.
  std::shared_ptr<PutWindow> attachSender(const std::string& node, uint64_t incarnation);
  void onFloor(std::shared_ptr<PutWindow> window, uint64_t floor);
  // A connection still writing a put its sender has since re-sent, or settled: it is stale.
  void supersede(TcpConnection* stale);
  static uint64_t nowMs();

 private:
  struct SplitPut {
    uint32_t remaining;
    Status status = Status::Ok;
    uint64_t wireId = 0;
    SentPuts::Node* to = nullptr;
    std::deque<OutPut> unsent;  // stripeReverse only
  };
  // A node whose last connection broke: its puts wait here for a new connection to the same
  // incarnation, until deadlineMs.
  struct Reconnect {
    uint64_t incarnation;
    uint64_t deadlineMs;
    uint64_t retryAtMs = 0;  // the next dial, when none is under way
    uint32_t backoffMs = 0;
    std::deque<OutPut> puts;
    std::string broke;  // why the connection broke, for peerLost if no new one comes
  };

  void onAccept();
  // Out of descriptors: the listener is not watched until the next tick, instead of reporting
  // the same pending connection at once, forever (libuv's and nginx's answer to EMFILE). The
  // tick's timer exists already: a timer made now would need a descriptor too.
  void pauseAccepting();
  // Room for one more accepted connection, under maxConnections and maxHandshakes.
  bool roomToAccept();
  // Connections that reach peer (a node id or a tcp:// address), dialing if needed.
  std::vector<TcpConnection*> route(const std::string& peer, Status* status);
  // The address's connections, dialing as many as it lacks of `stripes`. *refused: the first
  // dial was refused outright.
  std::vector<TcpConnection*> dial(const std::string& address, Status* status, bool* refused = nullptr);
  TcpConnection* dialOne(const std::string& address, Status* status, bool* refused);
  void dispatch(const std::vector<TcpConnection*>& conns, OutPut p);
  void split(const PutRequest& req, std::vector<TcpConnection*> ready);
  std::vector<TcpConnection*> readyOf(const std::string& node, uint64_t incarnation) const;
  // Redials the node's address if this side dialed it and fewer than `stripes` are left.
  void topUp(const std::string& node);
  // Tells the node how far its put ids are settled, if that moved by at least stride.
  void announceFloor(SentPuts::Node* to, uint64_t stride);

  // tcp_reconnect.cpp
  bool canKeep(const std::string& node, uint64_t incarnation) const;
  void keep(const std::string& node, uint64_t incarnation, std::vector<OutPut> puts, const std::string& why);
  void resendKept(const std::string& node, uint64_t incarnation, OutPut p);
  void redial(const std::string& node);
  // A connection to the node's address that is not ready yet (it may still become so).
  bool dialPending(const std::string& node) const;
  // After a connection died: a reconnecting node with no dial under way gets another one.
  void keepDialing(const std::string& node);
  void onRedialDead(TcpConnection* conn);
  void retryLater(const std::string& node);
  void resume(const std::string& node);
  void giveUp(const std::string& node, Status status, const std::string& why);
  void onReconnectTimer();
  void armReconnectTimer();

  ProviderContext ctx_;
  TcpOptions options_;
  uint64_t incarnation_;
  int listenFd_ = -1;
  uint64_t listenToken_ = 0;
  std::string bound_;
  bool wildcard_ = false;
  bool closing_ = false;
  uint64_t nextSerial_ = 1;
  std::vector<std::unique_ptr<TcpConnection>> conns_;
  std::vector<std::unique_ptr<TcpConnection>> dead_;  // freed on the next tick
  size_t accepted_ = 0, handshaking_ = 0;  // of conns_: accepted ones, and those of them not ready
  bool acceptPaused_ = false;
  TickGap tickGap_{0, 0};
  std::vector<TcpConnection*> roundPending_;  // live ones with TcpConnection::roundPending
  DeferredSet<TcpConnection> lazyAcks_, lateAcks_;  // live ones holding acks back
  std::unordered_map<std::string, std::vector<TcpConnection*>> byNode_;     // ready ones
  std::unordered_map<std::string, std::vector<TcpConnection*>> byAddress_;  // dialed ones
  std::unordered_map<std::string, std::string> addressOfNode_;
  std::unordered_map<uint64_t, SplitPut> splits_;                          // sender side, by request id
  SentPuts sent_;                                                           // sender side
  std::unordered_map<std::string, Reconnect> reconnecting_;                 // sender side, by node
  OneShotTimer reconnectTimer_;
  InboundSenders inbound_;                                                  // receiver side
  size_t nextStripe_ = 0;
  std::string dialError_;  // why the last dial failed at once, for the puts it was for

  std::mutex knownMu_;
  std::unordered_set<std::string> known_;  // node ids reachable by this provider
};

}  // namespace rvma
