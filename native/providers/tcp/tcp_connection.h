// One TCP connection to a peer: handshake (its hellos and proofs: TcpHello), framed puts out,
// placement of incoming puts straight into mailbox buffers, ACK/NACK, keepalive. Lives on the
// progress context only.
// Its puts belong to the provider: when the connection breaks it hands back those not
// answered yet, and the provider sends them again over another connection (see TcpProvider).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "../../core/mailbox.h"
#include "tcp_frames.h"
#include "../provider.h"
#include "put_window.h"
#include "tcp_hello.h"
#include "tcp_put.h"

namespace rvma {

class TcpProvider;

class TcpConnection {
 public:
  enum class State { Connecting, Handshake, Ready, Dead };

  // serial: unique among the provider's connections, for telling them apart after they die.
  TcpConnection(TcpProvider& owner, int fd, bool outgoing, std::string dialAddress, uint64_t serial);
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  void start(uint64_t nowMs);  // registers with epoll, sends hello (or waits for connect)
  // Queues the put; it goes out with the others of this round (endRound).
  void put(OutPut p);
  // The end of a progress round: the answers gathered go out as one, then the send queue.
  void endRound();
  // Whether the provider has this connection on its list for the end of the round.
  bool roundPending = false;
  void sendFloor(uint64_t floor);
  void tick(uint64_t nowMs, uint64_t missedMs);  // keepalive and timeouts (TickGap: missedMs)
  // Closes the socket and cancels a half-placed put. The puts not answered yet go back to the
  // provider (TcpProvider::onDead), which fails them with `status` or sends them again.
  void fail(Status status, const std::string& why, bool protocolError);

  State state() const { return state_; }
  const std::string& peerNodeId() const { return peer().nodeId; }
  uint64_t peerIncarnation() const { return peer().incarnation; }
  // The peer's name for its window of our puts (0 until its Window frame came): puts go out
  // only once it is known.
  uint64_t peerWindow() const { return peerWindow_; }
  const std::string& peerListenAddress() const { return peer().listenAddress; }
  const std::string& dialAddress() const { return dialAddress_; }
  // The peer's numeric address (set once connected): another connection claiming the same
  // node and incarnation must come from there too.
  const std::string& remoteHost() const { return remoteHost_; }
  bool outgoing() const { return outgoing_; }
  // Where to reach the peer again: the address dialed; an accepted peer's source port is not.
  std::string redialAddress() const { return outgoing_ ? dialAddress_ : std::string(); }
  std::vector<uint64_t>& connectRequests() { return connectRequests_; }
  // Dialed to reach this node: whoever else answers gets none of its puts.
  void expectNode(const std::string& node) { expectedNode_ = node; }
  const std::string& expectedNode() const { return expectedNode_; }
  // How a connection that never became ready ended: the connect was refused (nothing listens
  // at the address), or another node than the expected one answered.
  bool refused() const { return refused_; }
  bool wrongNode() const { return wrongNode_; }
  // ...or the peer failed authentication: dialing it again will not help.
  bool authRefused() const { return authRefused_; }

 private:
  struct TxItem {
    uint8_t head[wire::kHeaderBytes + wire::kPartExtBytes];
    uint32_t headLen = 0;
    std::string owned;        // hello or error text
    const uint8_t* body[2] = {};  // a put's payload: a gathered put's head, then its data
    uint64_t bodyLen[2] = {};
    uint64_t sent = 0;        // of total()
    bool put = false;         // a put's frame: the next pending put is written when it is done
    uint64_t acks = 0;        // an Ack or Acks frame: the puts it answers (more may join it until it starts)

    // What goes on the wire, in order (empty pieces included): up to three.
    int pieces(const uint8_t* p[3], uint64_t l[3]) const {
      p[0] = head;
      l[0] = headLen;
      if (!owned.empty()) {
        p[1] = reinterpret_cast<const uint8_t*>(owned.data());
        l[1] = owned.size();
        return 2;
      }
      for (int i = 0; i < 2; i++) {
        p[1 + i] = body[i];
        l[1 + i] = bodyLen[i];
      }
      return 3;
    }
    uint64_t total() const { return headLen + owned.size() + bodyLen[0] + bodyLen[1]; }
  };
  // A put on the wire. The peer answers puts in the order they were sent, and they leave the
  // send queue in that order, so answered and written puts are each a prefix of pending_.
  struct PendingPut {
    OutPut put;
    Status status = Status::Ok;
  };
  enum class Rx { Hello, Proof, Header, PartExt, Payload, Staged, Drain, ErrorText };

  void onIo(uint32_t events);
  void onConnected();
  void enqueue(TxItem item);
  void sendFrame(const wire::FrameHeader& f, std::string owned = {});
  void sendControl(wire::FrameType type, uint64_t id);
  void sendPut(OutPut p);
  void startWaiting();
  void flush();
  void updateInterest();
  // A peer that does not read what it makes us answer: reading from it stops until it does.
  void pauseReading(uint64_t nowMs);
  bool readSome();
  bool process();
  bool onHello();
  bool onProof(const uint8_t* proof);
  bool becomeReady();
  const wire::Hello& peer() const { return hello_.peer(); }
  bool onHeader();
  bool onPut(bool raw);
  bool onPartExt(const uint8_t* p);
  bool admit(bool part, bool* proceed);
  void placeStaged(const uint8_t* p);
  void finishPayload();
  bool refuse(Status s);
  bool answerAndDrain(Status s);
  void sendAnswer(uint64_t putId, Status s);
  void emitAcks();
  bool onAcks();
  bool beginPayload();
  uint8_t* payloadDst() const;
  void answer(uint64_t putId, Status status);
  void finishAnswered();
  void protocolFail(const std::string& why);
  // The peer failed authentication: closed with status Auth, reported as authFailed.
  void authFail(const std::string& why);
  void sendErrorText(const std::string& why);

  TcpProvider& owner_;
  int fd_;
  uint64_t token_ = 0;
  bool outgoing_;
  std::string dialAddress_;
  std::string remoteHost_;
  uint64_t serial_;
  State state_;
  TcpHello hello_;  // ours and the peer's
  std::vector<uint64_t> connectRequests_;
  std::string expectedNode_;
  bool refused_ = false, wrongNode_ = false, authRefused_ = false;
  uint64_t startedMs_ = 0, lastRxMs_ = 0, lastTxMs_ = 0;
  uint32_t interest_ = 0;  // the epoll events asked for
  // Frames other than puts waiting in tx_ (answers, pongs, control): they grow with what the
  // peer sends, so they are bounded (kMaxQueuedFrames), by not reading while they are many.
  size_t framesQueued_ = 0;
  bool readPaused_ = false;
  uint64_t pausedMs_ = 0;

  // Placed puts not answered yet: a run of acks that goes out as one Ack or Acks frame.
  uint64_t acksRun_ = 0, acksLast_ = 0;
  uint64_t lazyAcks_ = 0, lazyBytes_ = 0;  // of the run: acks held back (lazy or late), and their puts' bytes
  bool lazyHeld_ = false;                   // one of them is lazy (not late): it goes within kLazyAckDelayMs
  std::deque<TxItem> tx_;
  std::deque<OutPut> waiting_;  // over the in-flight cap or before the handshake
  std::deque<PendingPut> pending_;
  size_t answered_ = 0, written_ = 0;  // the prefixes of pending_ that are answered, written
  SentPuts::Node* sentTo_ = nullptr;  // the peer's ids in SentPuts, looked up once (the peer never changes)
  uint64_t inflightBytes_ = 0;

  std::shared_ptr<PutWindow> window_;  // what this peer's incarnation sent us (once ready)
  uint64_t peerWindow_ = 0;
  std::vector<uint8_t> rxBuf_;
  size_t rxStart_ = 0, rxEnd_ = 0;
  Rx rx_ = Rx::Hello;
  wire::FrameHeader hdr_{};
  Reservation res_;
  RegionReservation rawRes_;  // when the incoming payload is a raw write
  bool splitPart_ = false;    // when it is one part of a split put...
  uint8_t* partDst_ = nullptr;  // ...written here
  uint64_t remaining_ = 0, got_ = 0;
  std::string errorText_;
};

}  // namespace rvma
