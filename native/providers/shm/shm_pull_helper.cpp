#include "shm_pull_helper.h"

namespace rvma::shm {

PullHelper::~PullHelper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

Pull PullHelper::pull(pid_t pid, uint8_t* dst, uint64_t src, uint64_t len) {
  // Halves on page boundaries, so that each reader pins pages of its own.
  const uint64_t half = (len / 2) & ~uint64_t(4095);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    pid_ = pid;
    dst_ = dst + half;
    src_ = src + half;
    len_ = len - half;
    busy_ = true;
  }
  wake_.notify_one();
  Pull mine = shm::pull(pid, dst, src, half);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return !busy_; });
  if (mine != Pull::Ok) return mine;
  return result_;
}

void PullHelper::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || busy_; });
    if (stop_) return;
    lock.unlock();
    Pull result = shm::pull(pid_, dst_, src_, len_);
    lock.lock();
    result_ = result;
    busy_ = false;
    done_.notify_one();
  }
}

}  // namespace rvma::shm
