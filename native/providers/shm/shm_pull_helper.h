// A second thread for the receiver's large pulls: it reads one half of a far put with
// process_vm_readv while the progress context reads the other. One thread reading 16 MiB from
// another process ran at 5-6 GB/s here, two at 8-10 (huge pages on both sides), against
// memcpy's 15-17: the kernel's per-page work, not memory bandwidth, limits one reader.
#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "shm_channel.h"

namespace rvma::shm {

class PullHelper {
 public:
  PullHelper() = default;
  ~PullHelper();
  PullHelper(const PullHelper&) = delete;
  PullHelper& operator=(const PullHelper&) = delete;

  // pull() of len bytes, half of them on the helper thread (started on first use).
  Pull pull(pid_t pid, uint8_t* dst, uint64_t src, uint64_t len);

 private:
  void run();

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  bool stop_ = false, busy_ = false;
  pid_t pid_ = 0;
  uint8_t* dst_ = nullptr;
  uint64_t src_ = 0, len_ = 0;
  Pull result_ = Pull::Ok;
};

}  // namespace rvma::shm
