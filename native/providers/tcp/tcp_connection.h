// One TCP connection to a peer: handshake, framed puts out, placement of incoming puts
// straight into mailbox buffers, ACK/NACK, keepalive. Lives on the progress context only.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../core/mailbox.h"
#include "../../wire/frames.h"
#include "../provider.h"

namespace rvma {

class TcpProvider;

class TcpConnection {
 public:
  enum class State { Connecting, Handshake, Ready, Dead };

  TcpConnection(TcpProvider& owner, int fd, bool outgoing, std::string dialAddress);
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  void start(uint64_t nowMs);  // registers with epoll, sends hello (or waits for connect)
  void put(const PutRequest& req);
  void tick(uint64_t nowMs);   // keepalive and timeouts
  // Closes the socket, cancels a half-placed put, fails every pending put with `status`.
  void fail(Status status, const std::string& why, bool protocolError);

  State state() const { return state_; }
  const std::string& peerNodeId() const { return peer_.nodeId; }
  const std::string& peerListenAddress() const { return peer_.listenAddress; }
  const std::string& dialAddress() const { return dialAddress_; }
  // Where to reach the peer again: the address dialed; an accepted peer's source port is not.
  std::string redialAddress() const { return outgoing_ ? dialAddress_ : std::string(); }
  std::vector<uint64_t>& connectRequests() { return connectRequests_; }
  // Dialed to reach this node: whoever else answers gets none of its puts.
  void expectNode(const std::string& node) { expectedNode_ = node; }

 private:
  struct TxItem {
    uint8_t head[wire::kHeaderBytes + wire::kPartExtBytes];
    uint32_t headLen = 0;
    std::string owned;        // hello or error text
    const uint8_t* data = nullptr;
    uint64_t dataLen = 0;
    uint64_t sent = 0;        // of headLen + dataLen
    uint64_t putId = 0;       // nonzero for a put: mark written when done
  };
  struct PendingPut {
    uint64_t len;
    bool written = false;
    bool answered = false;
    Status status = Status::Ok;
  };
  enum class Rx { Hello, Header, PartExt, Payload, Drain, ErrorText };

  void onIo(uint32_t events);
  void onConnected();
  void sendFrame(const wire::FrameHeader& f, std::string owned = {});
  void sendPut(const PutRequest& req);
  void startWaiting();
  void flush();
  void updateInterest();
  bool readSome();
  bool process();
  bool onHello();
  bool onHeader();
  bool onPartExt(const uint8_t* p);
  void finishPayload();
  bool refuse(Status s);
  bool beginPayload();
  uint8_t* payloadDst() const;
  void answer(uint64_t putId, Status status);
  void finishPut(uint64_t putId);
  void protocolFail(const std::string& why);

  TcpProvider& owner_;
  int fd_;
  uint64_t token_ = 0;
  bool outgoing_;
  std::string dialAddress_;
  State state_;
  wire::Hello peer_;
  std::vector<uint64_t> connectRequests_;
  std::string expectedNode_;
  uint64_t startedMs_ = 0, lastRxMs_ = 0, lastTxMs_ = 0;
  bool wantWrite_ = false;

  std::deque<TxItem> tx_;
  std::deque<PutRequest> waiting_;  // over the in-flight cap or before the handshake
  std::unordered_map<uint64_t, PendingPut> pending_;
  uint64_t inflightBytes_ = 0;

  std::vector<uint8_t> rxBuf_;
  size_t rxStart_ = 0, rxEnd_ = 0;
  Rx rx_ = Rx::Hello;
  size_t helloNeed_ = wire::kHelloBytes, nodeIdLen_ = 0, addressLen_ = 0;
  wire::FrameHeader hdr_{};
  Reservation res_;
  RegionReservation rawRes_;  // when the incoming payload is a raw write
  bool splitPart_ = false;    // when it is one part of a split put...
  uint8_t* partDst_ = nullptr;  // ...written here
  uint64_t remaining_ = 0, got_ = 0;
  Status drainStatus_ = Status::Ok;
  std::string errorText_;
};

}  // namespace rvma
