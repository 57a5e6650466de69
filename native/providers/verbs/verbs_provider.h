// RDMA transport on rdma-core: rdma_cm sets up one RC queue pair per peer; every queue pair
// shares one protection domain, one shared receive queue (verbs_srq.h) and one completion
// queue, so receive buffers do not grow with the number of peers. The rdma_cm event channel
// and the CQ's completion channel sit in the endpoint's epoll set: nothing busy-polls unless
// asked to (busyPollUs, thread progress).
// Eager puts land in a per-connection ring (RDMA_WRITE_WITH_IMM) and are copied into the
// mailbox; large puts are read by the receiver straight into the mailbox buffer; raw writes
// go straight into a region the peer lent (RDMA_WRITE), followed by a notice.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../provider.h"
#include "../tick_gap.h"
#include "verbs_connection.h"
#include "verbs_options.h"
#include "verbs_regions.h"
#include "verbs_registrations.h"
#include "verbs_resources.h"
#include "verbs_srq.h"

namespace rvma {

class VerbsProvider final : public Provider {
 public:
  VerbsProvider(ProviderContext ctx, VerbsOptions options, uint64_t incarnation);
  ~VerbsProvider() override;

  // Finds a device with an active port, opens the CM channel and (if asked) listens. False
  // with *error, and *status Registration when the kernel refused the receive buffers.
  bool open(std::string* error, Status* status);
  std::string boundAddress() const override { return bound_; }
  uint16_t listenPort() const { return listenPort_; }  // 0: accepts nothing
  void start() override;  // registers the channel fds and the keepalive timer with progress (before the worker starts)

  const char* name() const override { return "verbs"; }
  bool reaches(const std::string& peer) override;
  bool supportsRaw() const override { return true; }
  // Eager puts are gathered into the send slot; larger ones are joined by the connection.
  bool gathers(const PutRequest& req) const override { return !req.raw; }
  void put(PutRequest req) override;
  void regionClosed(uint64_t key) override;
  void memoryGone(uint64_t memory) override;
  void close() override;
  // Connects (or reuses the connection) to an rdma:// address; a Connected event follows.
  Status dialable(const std::string& address) const override;
  void connect(uint64_t requestId, const std::string& address) override;
  bool registrationStats(uint64_t out[4]) const override;

  // For connections.
  ProviderContext& ctx() { return ctx_; }
  const VerbsOptions& options() const { return options_; }
  uint64_t incarnation() const { return incarnation_; }
  ibv_pd* pd() const { return pd_.get(); }
  ibv_cq* cq() const { return cq_.get(); }
  ibv_srq* srq() const { return srq_->srq(); }
  // Receive completions are routed by queue pair number, from creation to destruction.
  void addQp(uint32_t qpNum, uint32_t connId) { qpConns_[qpNum] = connId; }
  void removeQp(uint32_t qpNum) { qpConns_.erase(qpNum); }
  uint32_t maxReadDepth() const { return readDepth_; }
  verbs::RegistrationCache& registrations() { return *registrations_; }
  RegionLender& lender() { return *lender_; }
  // The connection has work for the end of this progress round (VerbsConnection::endRound).
  void dueThisRound(uint32_t connId) {
    ctx_.progress.roundDue();
    roundDue_.push_back(connId);
  }
  void onReady(VerbsConnection* conn);
  void onDead(VerbsConnection* conn);
  static uint64_t nowMs();
  // Any thread: what the registration cache did so far.
  const verbs::RegistrationCounters& registrationCounters() const { return counters_; }

 private:
  void onCmEvents();
  void onCompletions();
  int pollCompletions();  // the number handled
  void drainCompletions();
  void onReceive(const ibv_wc& wc);
  bool roomForConnection();
  void tick();
  void onConnectRequest(rdma_cm_id* id);
  VerbsConnection* dial(const std::string& address, Status* status);
  VerbsConnection* route(const std::string& peer, Status* status);
  VerbsConnection* find(uint32_t id);
  void reap() { dead_.clear(); }
  void endRound();

  ProviderContext ctx_;
  VerbsOptions options_;
  uint64_t incarnation_;
  std::string bound_;
  uint16_t listenPort_ = 0;
  uint32_t readDepth_ = 1;
  verbs::RegistrationCounters counters_;
  int maxCqe_ = 0;
  bool closed_ = false;
  bool busyPolling_ = false;

  // Destroyed bottom-up: connections (QPs, their MRs, ids) before the SRQ, CQ, PD and channel.
  verbs::DeviceListPtr devices_;
  ibv_context* device_ = nullptr;
  verbs::EventChannelPtr channel_;
  verbs::PdPtr pd_;
  verbs::CompChannelPtr compChannel_;
  verbs::CqPtr cq_;
  std::unique_ptr<verbs::SharedReceiveQueue> srq_;
  std::unique_ptr<verbs::RegistrationCache> registrations_;
  std::unique_ptr<RegionLender> lender_;
  verbs::CmIdPtr listenId_;
  uint64_t cmToken_ = 0, cqToken_ = 0;
  // Loop progress handles a bounded batch of completions per callback; this eventfd brings
  // it back for the rest (the completion channel only signals completions that come later).
  int moreFd_ = -1;
  uint64_t moreToken_ = 0;
  uint32_t nextConn_ = 1;
  TickGap tickGap_{0, 0};
  std::unordered_map<uint32_t, uint32_t> qpConns_;  // qp_num -> connection id, kept by the connections
  std::unordered_map<uint32_t, std::unique_ptr<VerbsConnection>> conns_;
  std::vector<std::unique_ptr<VerbsConnection>> dead_;  // freed at the next top-level entry
  std::vector<uint32_t> roundDue_;  // ids: a connection may die before the round ends
  std::vector<uint32_t> roundEnding_;  // the ids being ended now (endRound)
  std::unordered_map<std::string, VerbsConnection*> byAddress_;  // dialed
  std::unordered_map<std::string, std::vector<VerbsConnection*>> byNode_;  // ready
  std::unordered_map<std::string, std::string> addressOfNode_;  // where a node listens, to dial it again

  std::mutex knownMu_;
  std::unordered_set<std::string> known_;  // node ids this provider reaches
};

}  // namespace rvma
