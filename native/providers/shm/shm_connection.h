// One shm connection to a peer process on this host: the handshake on a unix socket
// (shm_handshake.cpp), then puts through the shared segment's rings. Small puts travel inline;
// larger ones are copied once through an arena where one side's memory is in it (the receiver
// copies out of the sender's, or the sender into the receiver's posted buffer under a write
// grant), else pulled by the receiver straight from the sender's memory into the mailbox
// buffer (process_vm_readv), or copied through the ring in chunks where the receiver cannot pull.
// The socket stays open only to tell either side at once when the other is gone.
// Lives on the progress context only.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../core/mailbox.h"
#include "../../core/region_table.h"
#include "../provider.h"
#include "shm_arena_share.h"
#include "shm_channel.h"
#include "shm_hello.h"
#include "shm_ring.h"

namespace rvma {

class ShmProvider;

class ShmConnection {
 public:
  enum class State { AwaitAccept, AwaitOffer, AwaitConfirm, Ready, Dead };

  // serial: unique among the provider's connections (it names them as holders of lent regions).
  ShmConnection(ShmProvider& owner, int sock, bool dialer, std::string address, uint64_t serial);
  ~ShmConnection();
  ShmConnection(const ShmConnection&) = delete;
  ShmConnection& operator=(const ShmConnection&) = delete;

  // Registers with progress; a dialer creates the segment and sends its offer.
  void start(uint64_t nowMs);
  // Sends req (queued until the handshake completed). Its outcome is reported exactly once.
  void put(const PutRequest& req);
  void tick(uint64_t nowMs);  // the handshake's deadline
  // Closes everything; puts not answered fail with `status`, a half-placed put is cancelled.
  void fail(Status status, const std::string& why, bool protocolError);

  // A region we lent this peer closed: it must confirm that it writes no more.
  void revoke(uint64_t key);

  // Busy polling: handles what the rings hold without a wake-up; the work found.
  int poll();
  // About to sleep: asks the peer for a kick, then looks once more. True when records had come
  // in meanwhile: it took the request back and handled them (the caller asks again later).
  bool beforeSleep();
  // Awake: the peer need not kick until beforeSleep() asks again.
  void awake();
  // A deferred-kick timer fired: wakes the peer if held-back acks still wait for it (progress context).
  void kickDeferred();

  State state() const { return state_; }
  uint64_t serial() const { return serial_; }
  bool dialer() const { return dialer_; }
  const std::string& peerNodeId() const { return peer_.nodeId; }
  uint64_t peerIncarnation() const { return peer_.incarnation; }
  pid_t peerPid() const { return peerPid_; }
  const std::string& address() const { return address_; }
  // Large puts to this peer are pulled by it (else chunked through the ring).
  bool peerPulls() const { return peerPulls_; }
  // How large puts to this peer travel, as endpoint.peers() says: "arena" (one memcpy through an
  // arena for those whose source or destination is in one, pulled otherwise), "cma" (pulled) or
  // "copy" (chunks through the ring).
  const char* largePuts() const { return arenaUsed_ ? "arena" : peerPulls_ ? "cma" : "copy"; }
  std::vector<uint64_t>& connectRequests() { return connectRequests_; }
  void expectNode(const std::string& node) { expectedNode_ = node; }
  const std::string& expectedNode() const { return expectedNode_; }

 private:
  struct Pending {
    uint64_t wireId;
    uint64_t requestId;
    std::shared_ptr<const uint8_t> joined;  // a joined put's bytes: the peer may still pull them
    // A far put the peer may answer with a Grant: its pulled bytes, to copy into the granted range.
    const uint8_t* data = nullptr;
    uint64_t len = 0;
    bool grantable = false;
    bool granted = false;  // copied under a Grant already
  };
  // A put of the peer's not answered yet because a granted put before it (or it itself) waits
  // for its Written: answers go in the order of the puts.
  struct Held {
    uint64_t wireId;
    uint32_t flags;
    Status status;
    bool granted;   // its range is reserved (res) until Written commits it
    Reservation res;
  };
  // A put being written into the ring: chunked ones take several records.
  struct Outgoing {
    PutRequest req;
    uint64_t wireId = 0;
    uint64_t sent = 0;     // chunked: payload bytes already in the ring
    bool notice = false;   // a one-sided raw write already made: only its RawNotice goes
  };
  // A record without a put id (answers, region records), waiting for room in the ring.
  struct Control {
    uint8_t bytes[sizeof(shm::RegionInfoRecord)];
    uint32_t size;
    AckPace pace;
  };
  struct Lent {
    uint64_t address, len;
  };
  // The put whose chunks are arriving.
  struct Incoming {
    bool active = false;
    shm::PutRecord put{};
    uint64_t next = 0;  // the offset its next chunk must have
    Status status = Status::Ok;
    Reservation res;
    RegionReservation raw;
  };

  void onSocket(uint32_t events);
  bool onArenaShare(const uint8_t* p, size_t len, std::vector<int>& fds);
  // Whether a far put's source [src, src + len) lies in our arena and the peer has it (shared
  // now if not yet): then its record carries kFlagArena.
  bool shareArena(const void* src, uint64_t len);
  void noteArenaUsed();  // one of our large puts went through an arena: endpoint.peers() says so
  void mayBeGranted(const uint8_t* data, uint64_t len);
  void attachRings(int inbound, int outbound);
  void becomeReady();

  // The handshake (shm_handshake.cpp).
  bool onOffer(const uint8_t* p, size_t len, std::vector<int>& fds);
  bool onAccept(const uint8_t* p, size_t len);
  bool onConfirm(const uint8_t* p, size_t len);
  bool onLateRefusal(const uint8_t* p, size_t len);
  bool adoptPeer();
  bool probe(const shm::Hello& h) const;
  shm::Hello hello(shm::HelloKind kind, uint32_t flags) const;
  // Peer authentication (auth/peer_auth.h; what each hello carries: shm_hello.h).
  const auth::PeerAuth& auth() const;
  auth::Party self() const;
  auth::Party peer() const;
  // Both sides authenticate or neither, and the proof h carries (if any) is the one the peer
  // owes us. If not, the peer is refused (and we failed).
  bool checkAuth(const shm::Hello& h);
  // Tells the peer it is refused (a refused Accept or Confirm), then fails with status Auth.
  void refuse(const std::string& why);
  // The peer refused us: why, as far as its refusal tells.
  std::string refusalWhy(const shm::Hello& h) const;
  void authFail(const std::string& why) { fail(Status::Auth, why, false); }

  // Receives, answers and transmits until nothing is left (or a budget is spent); then the
  // kicks the peer asked for. False once the connection failed.
  bool pump();
  void receive(int* work);
  void releaseRoom();  // publishes what we consumed; a kick if the peer waits for room
  bool handle(const shm::Record& r);
  // *granted: reserved and answered with a Grant instead of placed (onWritten commits it).
  Status place(const shm::Record& r, bool* fatal, bool* granted);
  // Whether far put r, its pulled part reserved at [dst, dst + len), may be written by its
  // sender instead of pulled (our arena is then shared with the peer, if it was not yet).
  bool mayGrant(const shm::Record& r, const uint8_t* dst, uint64_t len);
  bool onGrant(const shm::GrantRecord& g);
  bool onWritten(uint64_t wireId);
  bool placeChunk(const shm::Record& r);
  bool transmit(int* work);
  bool writePut(Outgoing& o, bool* corrupt);
  // Whether a put goes into the ring whole, in one record (its bytes are read during the write).
  bool inlined(const PutRequest& req) const;
  bool onAck(const shm::AckRecord& a);
  bool onRegionRecord(const shm::Record& r);
  void answer(uint64_t wireId, Status status, uint32_t putFlags);
  // answer(), or held behind a granted put not written yet; false once that failed the connection.
  bool settle(uint64_t wireId, Status status, uint32_t putFlags);
  void kickPeer();
  // pace: Eager wakes the peer; a lazy or late put's Ack need not (see transmit()).
  void control(const void* record, uint32_t size, AckPace pace = AckPace::Eager);
  // Raw writes straight into the peer's region, where both sides may reach the other's memory.
  bool oneSided() const { return peerPulls_ && weCanPull_; }
  void writeRaw(const PutRequest& req);
  void cancelIncoming();  // the put whose chunks were arriving, and those granted
  void release();

  ShmProvider& owner_;
  int sock_;
  uint64_t sockToken_ = 0;
  bool dialer_;
  std::string address_;
  State state_;
  shm::Hello peer_;  // its hello (the Offer's, on the acceptor): what the proofs cover
  auth::Nonce nonce_{};  // ours, fresh for this connection when we authenticate
  pid_t peerPid_ = 0;
  bool peerPulls_ = false;  // the peer read our probe
  bool weCanPull_ = false;  // we read the peer's probe
  uint64_t deadlineMs_ = 0;
  std::vector<uint64_t> connectRequests_;
  std::string expectedNode_;

  shm::Segment segment_;
  uint64_t ringBytes_ = 0;
  int wakeFd_ = -1, peerWakeFd_ = -1;
  uint64_t wakeToken_ = 0;
  shm::RingControl* inControl_ = nullptr;
  shm::RingControl* outControl_ = nullptr;
  shm::RingReader in_;
  shm::RingWriter out_;

  std::deque<Outgoing> queued_;   // not (fully) in the ring yet
  std::deque<Pending> pending_;   // in the ring, not answered yet, in ring order
  std::deque<Control> controls_;  // our answers and region records not in the ring yet
  uint64_t nextWireId_ = 1;
  uint64_t expectedWireId_ = 1;   // of the peer's next put
  Incoming incoming_;
  uint64_t serial_;
  bool sleeping_ = true;  // our consumerSleeping flag as last stored
  // In the ring since the peer was last woken (or seen awake): records that must wake it, and
  // held-back acks, which wake it only once kLazyAckRun (all late: kLateAckRun) of them wait, or
  // by the provider's timer for their pace (lazy if one of them is lazy, else late).
  bool wakePeer_ = false;
  uint32_t quietAcks_ = 0;
  bool lazyHeld_ = false;
  shm::PeerArena peerArena_;  // the peer's arena, once it shared it
  bool arenaShared_ = false;  // ours went to the peer
  bool arenaUsed_ = false;  // a far put of ours went from our arena, or into the peer's under a grant
  std::deque<Held> held_;  // from the oldest granted put not written yet on, in put order
  size_t openGrants_ = 0;  // granted puts in held_ not written yet
  std::unordered_map<uint64_t, Lent> lent_;                     // regions of the peer we may write
  std::unordered_map<uint64_t, std::vector<PutRequest>> asked_;  // raw writes waiting for RegionInfo
};

}  // namespace rvma
