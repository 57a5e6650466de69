// Same-host transport: an abstract unix socket to accept peers on, and per peer one
// ShmConnection whose shared segment carries the puts. Reached by "shm://NAME" addresses and,
// once connected, by node id. The JS thread only asks reaches() and peers() (locked);
// everything else runs on the progress context.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../../core/region_lender.h"
#include "../deferred_set.h"
#include "../provider.h"
#include "shm_connection.h"
#include "shm_options.h"
#include "shm_pull_helper.h"

namespace rvma {

class ShmProvider final : public Provider {
 public:
  ShmProvider(ProviderContext ctx, ShmOptions options, uint64_t incarnation);
  ~ShmProvider() override;

  // Binds the abstract socket before progress starts. Error text on failure.
  bool listen(std::string* error, Status* status);
  void start() override;  // registers the listener and the handshake timer (progress context)

  const char* name() const override { return "shm"; }
  bool reaches(const std::string& peer) override;
  bool supportsRaw() const override { return true; }
  // Gathered puts go inline, as a FarGatherPut (the head inline, the rest pulled), or in chunks.
  bool gathers(const PutRequest& req) const override { return !req.raw; }
  bool keepsOnDemand() const override { return true; }
  void put(PutRequest req) override;
  Status dialable(const std::string& address) const override;
  void connect(uint64_t requestId, const std::string& address) override;
  std::string boundAddress() const override { return bound_; }
  void describePeers(std::vector<PeerInfo>* out) override;
  void regionClosed(uint64_t key) override;
  void close() override;

  // For connections.
  ProviderContext& ctx() { return ctx_; }
  const ShmOptions& options() const { return options_; }
  uint64_t incarnation() const { return incarnation_; }
  uint64_t probeAddress() const { return reinterpret_cast<uint64_t>(&probe_); }
  uint64_t probeValue() const { return probe_; }
  RegionLender& lender() { return lender_; }
  shm::PullHelper& pullHelper() { return pullHelper_; }
  // Whether process pid claiming (node, incarnation) may connect: not while another
  // incarnation of that node, or another process, is connected as it (*why says so), as on tcp.
  bool admits(const std::string& node, uint64_t incarnation, pid_t pid, std::string* why) const;
  void onReady(ShmConnection* conn);
  void onLargePutsChanged(ShmConnection* conn);  // endpoint.peers() says conn->largePuts() from now on
  // conn died (its puts are reported already): it leaves every route.
  void onDead(ShmConnection* conn, bool wasReady, Status status, const std::string& why);
  static uint64_t nowMs();
  // A wake-up of this endpoint: until it sleeps again (beforeSleepAll), peers need not kick.
  void awake();
  // conn left acks of this pace (Lazy or Late) in the ring without waking its peer: the pace's
  // timer wakes the peer if it still sleeps on them then.
  void deferKick(ShmConnection* conn, AckPace pace);

 private:
  void onAccept();
  // Out of descriptors: the listener rests until the next tick instead of spinning (see TcpProvider).
  void pauseAccepting();
  // Arms housekeeping (once) for what waits on time: handshake deadlines, dead connections, a paused listener.
  void needHousekeeping();
  void houseKeep();
  ShmConnection* dial(const std::string& address, Status* status);
  ShmConnection* route(const std::string& peer, Status* status);
  // The nodes last reached at address are not dialed there again (it failed authentication).
  void forgetAddress(const std::string& address);
  // The connections as a list to walk while calls on them may kill one (which leaves conns_).
  const std::vector<ShmConnection*>& snapshot();
  int pollAll();
  bool beforeSleepAll();

  ProviderContext ctx_;
  ShmOptions options_;
  uint64_t incarnation_;
  uint64_t probe_;  // a value peers read from our memory to learn whether they may (see probe())
  int listenFd_ = -1;
  uint64_t listenToken_ = 0;
  std::string bound_;
  bool closing_ = false;
  bool acceptPaused_ = false;
  std::vector<std::unique_ptr<ShmConnection>> conns_;
  std::vector<std::unique_ptr<ShmConnection>> dead_;  // freed on the next tick
  std::vector<ShmConnection*> polling_;               // snapshot()'s list, kept to spare an allocation per round
  DeferredSet<ShmConnection> lazyKicks_, lateKicks_;  // live ones
  static constexpr uint64_t kHousekeepingMs = 100;
  OneShotTimer housekeeping_;
  bool housekeepingArmed_ = false;
  std::unordered_map<std::string, std::vector<ShmConnection*>> byNode_;  // ready ones
  std::unordered_map<std::string, ShmConnection*> byAddress_;            // dialed, live
  std::unordered_map<std::string, std::string> addressOfNode_;           // where we dialed a node

  uint64_t nextSerial_ = 1;
  RegionLender lender_;  // our regions lent to peers, by connection serial
  shm::PullHelper pullHelper_;

  std::mutex knownMu_;
  std::unordered_map<std::string, const char*> known_;  // node ids reachable now -> how large puts travel to them
  std::unordered_set<std::string> dialed_;       // node ids with an address to dial again (addressOfNode_)
};

}  // namespace rvma
