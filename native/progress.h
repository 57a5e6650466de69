// Where provider work runs. Loop: inline on the caller (the JS thread), like Node's own
// sockets. Thread: on a dedicated native thread that waits in epoll, so data keeps landing
// while JS computes. Providers with fds (tcp, verbs) add them to the same epoll set.
#pragma once
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rvma {

enum class ProgressMode { Loop = 0, Thread = 1 };

class Progress {
 public:
  explicit Progress(ProgressMode mode);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  ProgressMode mode() const { return mode_; }
  // Loop: runs the task before returning. Thread: queues it for the worker.
  void submit(std::function<void()> task);
  // Joins the worker; tasks still queued are dropped (their owners reject them).
  void stop();

 private:
  void run();

  ProgressMode mode_;
  int epollFd_ = -1;
  int wakeFd_ = -1;
  std::mutex mu_;
  std::vector<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace rvma
