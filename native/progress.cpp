#include "progress.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace rvma {

Progress::Progress(ProgressMode mode) : mode_(mode) {
  if (mode_ != ProgressMode::Thread) return;
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epollFd_ < 0 || wakeFd_ < 0) throw std::system_error(errno, std::generic_category(), "progress thread setup");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wakeFd_;
  epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &ev);
  worker_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  stop();
  if (wakeFd_ >= 0) close(wakeFd_);
  if (epollFd_ >= 0) close(epollFd_);
}

void Progress::submit(std::function<void()> task) {
  if (mode_ == ProgressMode::Loop) {
    task();
    return;
  }
  bool wasEmpty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    wasEmpty = queue_.empty();
    queue_.push_back(std::move(task));
  }
  // One wake-up per batch: the worker takes the whole queue at once.
  if (wasEmpty) {
    uint64_t one = 1;
    ssize_t n = write(wakeFd_, &one, sizeof one);
    (void)n;  // EAGAIN means a wake-up is already pending
  }
}

void Progress::stop() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  ssize_t n = write(wakeFd_, &one, sizeof one);
  (void)n;
  worker_.join();
  queue_.clear();
}

void Progress::run() {
  std::vector<std::function<void()>> batch;
  epoll_event events[16];
  for (;;) {
    int n = epoll_wait(epollFd_, events, 16, -1);
    if (n < 0 && errno != EINTR) return;
    uint64_t count;
    while (read(wakeFd_, &count, sizeof count) > 0) {
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      batch.swap(queue_);
    }
    for (auto& task : batch) task();
    batch.clear();
  }
}

}  // namespace rvma
