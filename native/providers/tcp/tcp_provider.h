// TCP transport: a listening socket, connections by peer node id or dial address, all on
// the endpoint's progress context. The JS thread only asks reaches() (locked); everything
// else runs as progress tasks.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../provider.h"
#include "tcp_connection.h"
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
  void put(const PutRequest& req) override;
  void connect(uint64_t requestId, const std::string& address);  // progress context
  void close() override;

  // For connections.
  ProviderContext& ctx() { return ctx_; }
  const TcpOptions& options() const { return options_; }
  wire::Hello hello() const;
  void onHandshake(TcpConnection* conn);
  void onDead(TcpConnection* conn);
  static uint64_t nowMs();

 private:
  void onAccept();
  TcpConnection* dial(const std::string& address, Status* status);
  TcpConnection* route(const std::string& peer, Status* status);

  ProviderContext ctx_;
  TcpOptions options_;
  uint64_t incarnation_;
  int listenFd_ = -1;
  uint64_t listenToken_ = 0;
  std::string bound_;
  std::vector<std::unique_ptr<TcpConnection>> conns_;
  std::vector<std::unique_ptr<TcpConnection>> dead_;  // freed on the next tick
  std::unordered_map<std::string, TcpConnection*> byNode_;
  std::unordered_map<std::string, TcpConnection*> byAddress_;
  std::unordered_map<std::string, std::string> addressOfNode_;

  std::mutex knownMu_;
  std::unordered_set<std::string> known_;  // node ids reachable by this provider
};

}  // namespace rvma
