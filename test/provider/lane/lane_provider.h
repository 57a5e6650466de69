// A provider that lives outside native/: it carries puts between the endpoints of one process
// that run it, through the receivers' mailbox tables, and counts what it carried per peer.
// Built only into the test provider build (RVMA_TEST_PROVIDER), to show that a provider is its
// folder plus its line in native/providers/provider_kinds.cpp.
#pragma once
#include <mutex>
#include <string>
#include <unordered_map>

#include "../../../native/providers/provider.h"

namespace rvma {

class LaneProvider final : public Provider {
 public:
  explicit LaneProvider(ProviderContext ctx);
  ~LaneProvider() override { close(); }
  const char* name() const override { return "lane"; }
  bool reaches(const std::string& peer) override;
  void put(PutRequest req) override;
  void describePeers(std::vector<PeerInfo>* out) override;
  void close() override;

 private:
  ProviderContext ctx_;
  std::mutex mu_;
  std::unordered_map<std::string, uint64_t> carried_;  // peer -> puts placed there
  bool open_ = true;
};

}  // namespace rvma
