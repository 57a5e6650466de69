// The tcp provider as the engine sees it: "tcp://" addresses, its options, its wire version.
#include "tcp_frames.h"
#include "../provider_kind.h"
#include "tcp_provider.h"

namespace rvma {
namespace {

bool readTcpOptions(const OptionBag& o, TcpOptions* tcp, std::string* error) {
  return o.number("maxPutBytes", &tcp->maxPutBytes, error) &&
         o.number("maxInflightBytes", &tcp->maxInflightBytes, error) &&
         o.number("keepaliveMs", &tcp->keepaliveMs, error) && o.number("peerTimeoutMs", &tcp->peerTimeoutMs, error) &&
         o.number("connectTimeoutMs", &tcp->connectTimeoutMs, error) && o.number("stripes", &tcp->stripes, error) &&
         o.number("stripeMinBytes", &tcp->stripeMinBytes, error) &&
         o.flag("stripeReverse", &tcp->stripeReverse, error) && o.number("reconnectMs", &tcp->reconnectMs, error) &&
         o.number("maxConnections", &tcp->maxConnections, error) &&
         o.number("maxHandshakes", &tcp->maxHandshakes, error) && o.allRead(error);
}

class TcpKind final : public ProviderKind {
 public:
  const char* name() const override { return "tcp"; }
  const char* scheme() const override { return "tcp://"; }
  uint32_t protocolVersion() const override { return wire::kVersion; }
  std::unique_ptr<Provider> open(const ProviderContext& ctx, const ProviderSetup& setup, Status* status,
                                 std::string* error) const override {
    TcpOptions options;
    options.listen = setup.listen;
    *status = Status::InvalidArgument;
    if (!readTcpOptions(setup.group, &options, error)) return nullptr;
    auto tcp = std::make_unique<TcpProvider>(ctx, std::move(options), setup.incarnation);
    if (!tcp->listen(error, status)) return nullptr;
    return tcp;
  }
};

}  // namespace

const ProviderKind& tcpKind() {
  static const TcpKind kind;
  return kind;
}

}  // namespace rvma
