#include "one_shot_timer.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace rvma {

OneShotTimer::~OneShotTimer() {
  if (fd_ >= 0) ::close(fd_);
}

bool OneShotTimer::prepare() {
  if (fd_ >= 0) return true;
  fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd_ < 0) return false;
  token_ = progress_.add(fd_, EPOLLIN, [this](uint32_t) {
    uint64_t expirations;  // one read takes them all; none: a stale wake-up
    if (read(fd_, &expirations, sizeof expirations) != sizeof expirations) return;
    fire_();
  });
  return true;
}

void OneShotTimer::arm(uint64_t delayMs) {
  if (!prepare()) return;
  itimerspec spec{};
  spec.it_value.tv_sec = time_t(delayMs / 1000);
  spec.it_value.tv_nsec = long(delayMs % 1000) * 1000000L + (delayMs == 0 ? 1 : 0);  // all zero would disarm
  timerfd_settime(fd_, 0, &spec, nullptr);
}

void OneShotTimer::disarm() {
  if (fd_ < 0) return;
  itimerspec spec{};
  timerfd_settime(fd_, 0, &spec, nullptr);
}

void OneShotTimer::stop() {
  if (fd_ < 0) return;
  progress_.remove(token_, fd_);
  ::close(fd_);
  fd_ = -1;
}

}  // namespace rvma
