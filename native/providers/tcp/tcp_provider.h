// TCP transport: a listening socket and, per peer, one or more connections ("stripes"),
// all on the endpoint's progress context. The JS thread only asks reaches() (locked);
// everything else runs as progress tasks. Large puts are split into offset-addressed parts
// across a peer's connections; the receiver counts the put once its last part landed.
#pragma once
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../provider.h"
#include "tcp_connection.h"
#include "split_receiver.h"
#include "tcp_options.h"

namespace rvma {

class TcpProvider final : public Provider {
 public:
  TcpProvider(ProviderContext ctx, TcpOptions options, uint64_t incarnation);
  ~TcpProvider() override;

  // Binds the listen address (if any) before progress starts. Error text on failure.
  bool listen(std::string* error);
  const std::string& boundAddress() const { return bound_; }
  void start();  // registers the listener and the keepalive timer (progress context)

  const char* name() const override { return "tcp"; }
  bool reaches(const std::string& peer) override;
  bool supportsRaw() const override { return true; }
  void put(const PutRequest& req) override;
  void connect(uint64_t requestId, const std::string& address);  // progress context
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
  void onHandshake(TcpConnection* conn);
  void onDead(TcpConnection* conn);
  // A put (or one part of a split put) got its answer and its bytes left the send queue.
  void putFinished(uint64_t putId, Status status);
  SplitReceiver& splits() { return splitsIn_; }
  static uint64_t nowMs();

 private:
  struct SplitPut {
    uint32_t remaining;
    Status status = Status::Ok;
    std::deque<std::pair<TcpConnection*, PutRequest>> unsent;  // stripeReverse only
  };

  void onAccept();
  // Connections that reach peer (a node id or a tcp:// address), dialing if needed.
  std::vector<TcpConnection*> route(const std::string& peer, Status* status);
  std::vector<TcpConnection*> dial(const std::string& address, Status* status);
  TcpConnection* dialOne(const std::string& address, Status* status);
  void split(const PutRequest& req, const std::vector<TcpConnection*>& ready);

  ProviderContext ctx_;
  TcpOptions options_;
  uint64_t incarnation_;
  int listenFd_ = -1;
  uint64_t listenToken_ = 0;
  std::string bound_;
  bool wildcard_ = false;
  std::vector<std::unique_ptr<TcpConnection>> conns_;
  std::vector<std::unique_ptr<TcpConnection>> dead_;  // freed on the next tick
  std::unordered_map<std::string, std::vector<TcpConnection*>> byNode_;     // ready ones
  std::unordered_map<std::string, std::vector<TcpConnection*>> byAddress_;  // dialed ones
  std::unordered_map<std::string, std::string> addressOfNode_;
  std::unordered_map<uint64_t, SplitPut> splits_;                          // sender side
  SplitReceiver splitsIn_;                                                  // receiver side
  size_t nextStripe_ = 0;

  std::mutex knownMu_;
  std::unordered_set<std::string> known_;  // node ids reachable by this provider
};

}  // namespace rvma
