#include "progress.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>

namespace rvma {

namespace {
constexpr uint64_t kWakeToken = 1;
}

Progress::Progress(ProgressMode mode) : mode_(mode) {
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epollFd_ < 0 || wakeFd_ < 0) {
    int err = errno;
    if (epollFd_ >= 0) close(epollFd_);
    if (wakeFd_ >= 0) close(wakeFd_);
    throw std::system_error(err, std::generic_category(), "progress setup");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeToken;
  epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &ev);
}

Progress::~Progress() {
  stop();
  for (int fd : timerFds_) close(fd);
  close(wakeFd_);
  close(epollFd_);
}

void Progress::start() {
  if (mode_ == ProgressMode::Thread && !worker_.joinable()) worker_ = std::thread([this] { run(); });
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

void Progress::ownWork(bool owned) {
  workOwner_.store(owned ? std::this_thread::get_id() : std::thread::id(), std::memory_order_relaxed);
}

bool Progress::runHereIfIdle(const std::function<void()>& fn) {
  if (mode_ == ProgressMode::Loop || workOwner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    fn();
    return true;
  }
  std::unique_lock<std::mutex> work(work_, std::try_to_lock);
  if (!work.owns_lock() || !worker_.joinable()) return false;  // busy or not started: queue it
  bool queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queued = !queue_.empty();
  }
  ownWork(true);
  if (queued) runTasks();  // what was submitted before goes first (no eventfd read when nothing was)
  fn();
  ownWork(false);
  return true;
}

void Progress::endRoundIfIdle() {
  if (mode_ == ProgressMode::Loop) return endRound();
  if (workOwner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return endRound();
  std::unique_lock<std::mutex> work(work_, std::try_to_lock);
  if (!work.owns_lock() || !worker_.joinable()) return;  // the worker ends its round itself
  ownWork(true);
  endRound();
  ownWork(false);
}

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    stopRequested_ = true;
  }
  if (worker_.joinable()) {
    uint64_t one = 1;
    ssize_t n = write(wakeFd_, &one, sizeof one);
    (void)n;
    worker_.join();
  }
  queue_.clear();
}

uint64_t Progress::add(int fd, uint32_t events, IoHandler handler) {
  uint64_t token = nextToken_++;
  if (poller_) {
    if (!poller_->watch(token, fd, events)) return 0;
    handlers_.emplace(token, std::move(handler));
    return token;
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) return 0;
  handlers_.emplace(token, std::move(handler));
  return token;
}

void Progress::modify(uint64_t token, int fd, uint32_t events) {
  if (poller_) return poller_->change(token, events);
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  epoll_ctl(epollFd_, EPOLL_CTL_MOD, fd, &ev);
}

void Progress::remove(uint64_t token, int fd) {
  if (poller_) poller_->unwatch(token);
  else epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(token);
}

uint64_t Progress::every(uint32_t intervalMs, std::function<void()> fn) {
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tfd < 0) return 0;
  itimerspec spec{};
  spec.it_interval.tv_sec = intervalMs / 1000;
  spec.it_interval.tv_nsec = long(intervalMs % 1000) * 1000000L;
  spec.it_value = spec.it_interval;
  timerfd_settime(tfd, 0, &spec, nullptr);
  timerFds_.push_back(tfd);
  return add(tfd, EPOLLIN, [tfd, fn = std::move(fn)](uint32_t) {
    uint64_t expirations;
    while (read(tfd, &expirations, sizeof expirations) > 0) {
    }
    fn();
  });
}

void Progress::dispatch(uint64_t token, uint32_t epollEvents) {
  auto it = handlers_.find(token);
  if (it == handlers_.end()) return;
  IoHandler handler = it->second;  // a copy: the handler may remove itself
  handler(epollEvents);
  endRound();
}

void Progress::endRound() {
  roundDue_.store(false, std::memory_order_relaxed);
  for (auto& fn : roundEnds_) fn();
}

void Progress::runTasks() {
  uint64_t count;
  while (read(wakeFd_, &count, sizeof count) > 0) {
  }
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    batch.swap(queue_);
  }
  for (auto& task : batch) task();
}

int Progress::wait(int timeoutMs, std::unique_lock<std::mutex>* work) {
  epoll_event events[64];
  if (work) {
    ownWork(false);
    work->unlock();
  }
  int n = epoll_wait(epollFd_, events, 64, timeoutMs);
  if (work) {
    work->lock();
    ownWork(true);
  }
  for (int i = 0; i < n; i++) {
    uint64_t token = events[i].data.u64;
    if (token == kWakeToken) {
      runTasks();
      continue;
    }
    auto it = handlers_.find(token);  // gone if an earlier handler in this batch removed it
    if (it == handlers_.end()) continue;
    IoHandler handler = it->second;  // a copy: the handler may remove itself
    handler(events[i].events);
  }
  return n;
}

void Progress::busyPoll(uint32_t us, std::function<int()> poll, std::function<bool()> beforeSleep) {
  busyPollUs_ = std::max(busyPollUs_, us);
  busyPolls_.push_back(std::move(poll));
  beforeSleeps_.push_back(std::move(beforeSleep));
}

int Progress::pollOnce() {
  int work = 0;
  for (auto& poll : busyPolls_) work += poll();
  if (mode_ == ProgressMode::Loop) endRound();  // the worker ends its rounds in run()
  return work;
}

bool Progress::beforeSleep() {
  bool worked = false;
  for (auto& before : beforeSleeps_) worked |= before();
  return worked;
}

bool Progress::stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void Progress::run() {
  using Clock = std::chrono::steady_clock;
  const auto window = std::chrono::microseconds(busyPollUs_);
  std::unique_lock<std::mutex> work(work_);
  ownWork(true);
  while (!stopping()) {
    int rounds = 0;
    while (rounds < kSettleRounds && beforeSleep()) {
      endRound();
      rounds++;
    }
    if (rounds == kSettleRounds) {
      wait(0);  // a peer that keeps sending: one more round before the next sleep
    } else if (wait(0) == 0 && wait(-1, &work) > 0) {
      // Work signalled while this thread was busy (a task queued by JavaScript) was taken by
      // wait(0) without a sleep: only a wait that blocked counts as a wake-up.
      wakeups_.fetch_add(1, std::memory_order_relaxed);
    }
    endRound();
    if (busyPolls_.empty()) continue;
    for (auto until = Clock::now() + window; !stopRequested_;) {
      int work = wait(0) + pollOnce();
      endRound();
      if (work > 0) until = Clock::now() + window;
      else if (Clock::now() >= until) break;
      // Spinning must not keep the CPU from a thread with work (the application's JS thread
      // above all, which produces the next message): with two cores and two spinning
      // endpoints, an shm round trip took 1000 us without this instead of tens.
      else sched_yield();
    }
  }
  ownWork(false);
}

}  // namespace rvma
