// One RC queue pair to a peer, set up through rdma_cm. Carries eager puts into the peer's
// landing ring, RTS/READ/FIN for large puts, raw writes straight into the peer's regions
// (verbs_raw_writes.cpp), ACK/NACK answers that return ring credits, and keepalive pings.
// It receives through the provider's shared receive queue: the provider hands it the
// receive completions of its queue pair (onReceive). Lives on the progress context only.
// With auth, each side proves the shared secret (AuthMsg) after the hellos; the connection
// is ready only once the peer's proof verifies, and nothing else of the peer's counts before
// (the handshake: verbs_hello.cpp).
// Work is batched by progress round (Progress::atRoundEnd): the answers gathered in a round
// leave as one Acks message, and the round's work requests as one chain, one doorbell, with
// a completion asked for every kSignalEvery of them and for the chain's last (flushSends).
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../core/mailbox.h"
#include "../provider.h"
#include "verbs_registrations.h"
#include "verbs_resources.h"
#include "verbs_messages.h"
#include "verbs_wire.h"

namespace rvma {

class VerbsProvider;

class VerbsConnection {
 public:
  enum class State { Resolving, Connecting, Ready, Dead };

  // Control buffers for messages outside the window (revokes, pings and their answers).
  static constexpr uint32_t kSpareCtrl = 8;
  // Send work requests one connection may have posted: its share of the completion queue.
  static uint32_t sendDepth(uint32_t slots) { return 4 * slots + 16; }
  // Control send buffers: requests and answers (each bounded by the window), the hello and
  // the proof, spares.
  static uint32_t ctrlDepth(uint32_t slots) { return 2 * slots + 4 + kSpareCtrl; }

  VerbsConnection(VerbsProvider& owner, uint32_t id, verbs::CmIdPtr cmId, bool outgoing, std::string address);
  ~VerbsConnection();
  VerbsConnection(const VerbsConnection&) = delete;
  VerbsConnection& operator=(const VerbsConnection&) = delete;

  // Queue pair (on the shared receive queue) and buffers; before rdma_connect / rdma_accept.
  // Not Ok: Registration (buffers refused by the kernel) or NoPeer, with *error saying why.
  Status setup(std::string* error);
  rdma_conn_param connParam() const;
  void onEstablished();
  // A send-side work completion of this connection.
  void onCompletion(const ibv_wc& wc);
  // A receive completion of this queue pair; a control message was copied out to msg (len
  // bytes) and its shared buffer already re-posted.
  void onReceive(const ibv_wc& wc, const uint8_t* msg, uint32_t len);
  void put(const PutRequest& req);
  // The end of a progress round: the round's answers and work requests leave (see above).
  void endRound();
  // Resolved with the peer's node id once ready, failed with the connection.
  void addConnectRequest(uint64_t requestId) { connectRequests_.push_back(requestId); }
  // One of our regions that this peer may write is closing.
  void revoke(uint64_t key);
  // Dialed to reach this node id: another node answering is a lost peer, not a new one.
  void expect(const std::string& nodeId) { expectedNode_ = nodeId; }
  // Periodic: connect timeout, keepalive ping, silent peer (see VerbsOptions).
  void tick(uint64_t nowMs, uint64_t missedMs);  // keepalive and timeouts (TickGap: missedMs)
  // Tears the queue pair down, cancels reads still landing, fails every pending put.
  void fail(Status status, const std::string& why);

  uint32_t id() const { return id_; }
  rdma_cm_id* cmId() const { return cmId_.get(); }
  State state() const { return state_; }
  void setState(State s) { state_ = s; }
  bool outgoing() const { return outgoing_; }
  const std::string& address() const { return address_; }
  const std::string& peerNodeId() const { return peerNode_; }
  // 'rdma://IP:PORT' where the peer accepts connections (from its hello), "" if it does not.
  std::string peerListenAddress() const;

 private:
  enum Kind : uint8_t { kCtrlSend, kEagerSend, kRead, kWrite };
  static constexpr uint64_t kChunk = 1 << 20;  // one RDMA_READ / RDMA_WRITE per MiB: small messages for any device
  // Unsignalled work requests between two signalled ones: a completion retires every work
  // request posted before it (a send queue completes in order), so one in 16 frees the rest.
  static constexpr uint32_t kSignalEvery = 16;
  // The statuses a peer may answer a request with (Ok included).
  static bool isAnswer(uint16_t status);
  struct OutPut {
    PutRequest req;
    uint32_t slot = verbs::kNoSlot;  // eager (or a small raw write): the staging / landing slot it holds
    verbs::RegistrationCache::Entry* source = nullptr;  // large: req.data's registration, held until the answer
  };
  struct RemoteRegion {
    uint64_t addr, len;
    uint32_t rkey;
  };
  struct ReadOp {
    uint64_t putId;
    Reservation res;
    verbs::RegistrationCache::Entry* target;  // the mailbox buffer's registration
    uint32_t chunksLeft;
  };
  struct SendWr {
    ibv_send_wr wr;
    ibv_sge sge;
    Kind kind;
    uint32_t index;  // the control buffer, landing slot or read it is for
  };
  // A work request on the send queue, until a completion at or after it retires it.
  struct Posted {
    uint32_t seq;
    Kind kind;
    uint32_t index;
  };

  // A send's wr_id: this connection (routing, upper half) and the post's sequence number.
  uint64_t wrId(uint32_t seq) const { return (uint64_t(id_) << 32) | seq; }
  void destroyQp();
  void shortenRnrWait();
  void markRound();
  // Queued for the round's chain (kind and index of w say what its completion frees).
  void postSend(const SendWr& w);
  void flushSends();
  void retire(const Posted& p);
  uint32_t inflight() const { return uint32_t(outstanding_.size() + queries_.size()); }
  uint8_t* ctrlTx(uint32_t* index);
  void sendCtrl(uint32_t index, uint32_t len);
  void sendUnsolicited(verbs::MsgType type, uint64_t key = 0);
  void drainUnsolicited();
  // Gathered for the round's Acks: a credit (slot) returns with its put's answer.
  void sendAck(uint64_t putId, Status status, uint32_t slot);
  void flushAnswers();
  verbs::Phase phase() const;
  bool authenticates() const;  // this endpoint has an auth secret
  // The handshake (verbs_hello.cpp): hellos, proofs, ready.
  void sendHello();
  void onHello(const verbs::CtrlMsg& m);
  auth::Party self() const;
  auth::Party peer() const;
  void maybeProve();
  void onAuth(const verbs::AuthMsg& m);
  // The peer failed authentication: closed with status Auth, reported as authFailed, once
  // what we sent it (our hello, our proof) has landed, so it can tell why on its side too.
  void authFail(const std::string& why);
  void finishAuthFail();
  std::string peerLabel() const;
  void maybeReady();

  void startWaiting();
  void sendPut(const PutRequest& req);
  void sendRaw(const PutRequest& req);  // verbs_raw_writes.cpp, as the other raw-write members
  void writeRaw(const PutRequest& req, const RemoteRegion& region);
  void onEager(uint32_t slot, uint32_t byteLen);
  void onCtrl(const uint8_t* p, uint32_t len);
  void onRts(const verbs::RtsMsg& m, const std::string& head);
  void onAck(const verbs::AckMsg& m);
  void onAcks(const verbs::AcksMsg& m);
  bool settle(uint64_t putId, uint16_t status);  // false: the answer broke the protocol
  void onRegionQuery(uint64_t key);
  void onRegionInfo(const verbs::RegionInfoMsg& m);
  void onRaw(const verbs::RawMsg& m);
  void onRevoke(uint64_t key);
  void onReadDone(uint32_t readId);
  void protocolFail(const std::string& why);

  VerbsProvider& owner_;
  uint32_t id_;
  verbs::CmIdPtr cmId_;
  bool outgoing_;
  std::string address_;
  std::string expectedNode_;
  State state_;
  uint64_t startedMs_, heardMs_ = 0;  // created; last message from the peer
  bool pinging_ = false;              // a ping is unanswered

  // Own memory: landing ring (remote-writable) and local staging (tx slots, control send buffers).
  uint32_t slots_, slotBytes_, ctrlCount_, sqDepth_;
  verbs::PageBuffer ring_, local_;
  verbs::MrPtr ringMr_, localMr_;
  uint8_t* txStage_ = nullptr;
  uint8_t* ctrlTxBase_ = nullptr;
  std::vector<uint32_t> freeCtrlTx_;    // for the hello, requests (bounded by the window) and answers
  std::vector<uint32_t> freeSpareTx_;   // for messages outside the window (revokes, pings)
  std::deque<std::pair<verbs::MsgType, uint64_t>> unsolicited_;  // waiting for a spare buffer

  // Authentication: our nonce (in our hello), the peer's, and how far the proofs got.
  auth::Nonce nonce_{}, peerNonce_{};
  bool proofSent_ = false, peerProven_ = false;
  bool authFailing_ = false;  // waiting for our sends to land before closing with Status::Auth
  std::string authWhy_;

  // The peer, from its hello.
  bool established_ = false, helloSent_ = false, helloReceived_ = false;
  std::string peerNode_;
  uint64_t peerIncarnation_ = 0, peerRing_ = 0;
  uint32_t peerRkey_ = 0, peerSlots_ = 0, peerSlotBytes_ = 0;
  uint16_t peerListenPort_ = 0;
  uint64_t peerMaxPut_ = 0;
  uint32_t window_ = 0;
  uint64_t eagerMax_ = 0;

  // Sender side.
  std::vector<uint32_t> freeSlots_;
  std::unordered_map<uint64_t, OutPut> outstanding_;
  std::deque<PutRequest> waiting_;
  std::vector<uint64_t> connectRequests_;
  // Raw writes: the peer's regions it lent us, and the raw writes waiting for a region's answer.
  std::unordered_map<uint64_t, RemoteRegion> regions_;
  std::unordered_map<uint64_t, std::vector<PutRequest>> queries_;
  // Send queue: work requests posted and not yet retired, and those waiting for the round's
  // end (or for room).
  uint32_t sqInflight_ = 0, nextSeq_ = 0, sinceSignal_ = 0;
  std::deque<Posted> posted_;
  std::deque<SendWr> backlog_;
  std::vector<SendWr> chain_;  // the chain being posted (reused)
  bool roundDue_ = false;      // the provider ends this connection's round
  // Receiver side: the round's answers.
  std::vector<verbs::AckEntry> answers_;
  // Receiver side: large puts being read.
  std::unordered_map<uint32_t, ReadOp> reads_;
  uint32_t nextRead_ = 1;
};

}  // namespace rvma
