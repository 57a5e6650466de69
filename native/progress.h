// Where provider work runs. One epoll set per endpoint holds every provider fd, a wake-up
// eventfd for submitted tasks and timers. Loop mode: the addon has libuv watch the epoll fd
// and calls poll() on the JS thread, and submitted tasks run inline. Thread mode: a native
// thread waits in epoll and runs everything, so data keeps landing while JS computes.
#pragma once
#include <cstdint>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rvma {

enum class ProgressMode { Loop = 0, Thread = 1 };

// Handlers run on the progress context (JS thread in loop mode, the worker in thread mode).
using IoHandler = std::function<void(uint32_t epollEvents)>;

// Loop mode: the JS thread's event loop watches each fd itself (one poll per fd), saving
// the extra epoll_wait a nested epoll set would cost on every wake-up. It reports
// readiness back through Progress::dispatch(token, epollEvents).
class ExternalPoller {
 public:
  virtual ~ExternalPoller() = default;
  virtual bool watch(uint64_t token, int fd, uint32_t epollEvents) = 0;
  virtual void change(uint64_t token, uint32_t epollEvents) = 0;
  virtual void unwatch(uint64_t token) = 0;
};

class Progress {
 public:
  explicit Progress(ProgressMode mode);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  ProgressMode mode() const { return mode_; }
  // Loop: runs the task before returning. Thread: queues it for the worker.
  void submit(std::function<void()> task);
  // Runs fn on the calling thread and returns true when that is the progress context now: always
  // in loop mode; in thread mode on the worker, or while the worker sleeps (fn then runs after
  // the tasks queued before it, under the lock the worker takes when it wakes). Saves the worker
  // a wake-up and fn a hop between threads. False (fn not run): the worker is busy, submit().
  // Work fn holds back for the end of the round waits for endRoundIfIdle() or the worker.
  bool runHereIfIdle(const std::function<void()>& fn);
  // Thread mode, any thread: ends the round now if the worker sleeps (else it ends it itself).
  void endRoundIfIdle();
  // Starts the worker (thread mode); before that, submitted tasks wait.
  void start();
  // Joins the worker; tasks still queued are dropped (their owners reject them).
  void stop();

  // fd registration, from the progress context only. The handler is dropped by remove(),
  // and an event already fetched for a removed fd is not delivered.
  uint64_t add(int fd, uint32_t events, IoHandler handler);
  void modify(uint64_t token, int fd, uint32_t events);
  void remove(uint64_t token, int fd);
  // A periodic callback on the progress context (timerfd in the same epoll set).
  uint64_t every(uint32_t intervalMs, std::function<void()> fn);
  // Thread mode, opt-in: after handling anything the worker keeps going for `us` more
  // microseconds before it sleeps, calling poll() (a provider's own poll, which needs no
  // wake-up; returns the work it found) and checking the epoll set without blocking; work
  // found restarts the window. Saves the sleep and wake-up (tens of µs) when the next message
  // follows soon, at the cost of a busy CPU meanwhile. beforeSleep() runs before each sleep,
  // so that the provider can ask for a wake-up again. Set before start(); each provider that
  // busy-polls adds its own pair, and the longest window wins.
  void busyPoll(uint32_t us, std::function<int()> poll, std::function<bool()> beforeSleep);
  // beforeSleep() alone, without busy polling: the worker runs it before each sleep, and in loop
  // mode the event loop before it blocks (JsWake). It returns true when it found work and did
  // it (instead of waking itself up through its fd): it is then run again before the sleep,
  // after the events it made were handled. Register before start().
  void beforeSleeping(std::function<bool()> fn) { beforeSleeps_.push_back(std::move(fn)); }
  bool hasSleepHooks() const { return !beforeSleeps_.empty(); }
  // Work a provider holds back for the rest of a round (a put queued on a connection waits
  // for the others queued in the same round, so they leave in one write): fn runs at the end
  // of every round. A round is one pass of the worker (its tasks and ready fds), one fd
  // callback or busy-poll pass in loop mode, or a flush() from JS. Register before start().
  void atRoundEnd(std::function<void()> fn) { roundEnds_.push_back(std::move(fn)); }
  void endRound();
  // A provider held work back for the end of this round: whoever started the round must end
  // it (JS flushes at the end of its turn only then, not after every put).
  void roundDue() { roundDue_.store(true, std::memory_order_relaxed); }
  bool isRoundDue() const { return roundDue_.load(std::memory_order_relaxed); }
  // Loop mode: the event loop does the spinning (see JsWake); these run one round of it.
  uint32_t busyPollUs() const { return busyPollUs_; }
  int pollOnce();
  // Every beforeSleep hook once; true when one of them did work.
  bool beforeSleep();
  // Rounds of beforeSleep() before one sleep, at most: past them the sleep is skipped once
  // (a peer that keeps sending must not keep timers and other fds from their turn).
  static constexpr int kSettleRounds = 8;

  // Loop mode: hand fd watching to the event loop (before anything is added), or take it
  // back (nullptr) once the poller goes away.
  void usePoller(ExternalPoller* poller) { poller_ = poller; }
  // Runs the handler registered under token (the poller's callback).
  void dispatch(uint64_t token, uint32_t epollEvents);
  // Thread mode: how often the worker woke from a sleep with something to do.
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  void run();
  // The number of events handled. With work (thread mode), the lock is let go while it sleeps.
  int wait(int timeoutMs, std::unique_lock<std::mutex>* work = nullptr);
  void ownWork(bool owned);
  bool stopping();
  void runTasks();

  ProgressMode mode_;
  int epollFd_ = -1;
  int wakeFd_ = -1;
  std::mutex mu_;
  // Thread mode: held by whoever runs provider work, the worker except while it sleeps in
  // epoll_wait, when the JS thread may take it (runHereIfIdle). workOwner_ names the holder, so
  // that work already under it runs nested work directly instead of locking again.
  std::mutex work_;
  std::atomic<std::thread::id> workOwner_{};
  std::vector<std::function<void()>> queue_;
  bool stopping_ = false;
  std::atomic<bool> stopRequested_{false};  // read on every busy-poll round, without the lock
  std::thread worker_;
  std::unordered_map<uint64_t, IoHandler> handlers_;
  ExternalPoller* poller_ = nullptr;
  std::vector<int> timerFds_;
  uint32_t busyPollUs_ = 0;
  std::vector<std::function<int()>> busyPolls_;
  std::vector<std::function<bool()>> beforeSleeps_;
  std::vector<std::function<void()>> roundEnds_;
  std::atomic<bool> roundDue_{false};
  std::atomic<uint64_t> wakeups_{0};  // read in loop mode only, where one thread does it all
  uint64_t nextToken_ = 2;  // 1 is the wake-up eventfd
};

}  // namespace rvma
