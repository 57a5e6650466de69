// The system calls under an shm connection: abstract unix sockets that pass fds, the sealed
// memfd segment, eventfds, and cross-memory reads (process_vm_readv). RAII for what it opens.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../../core/status.h"

namespace rvma::shm {

// A listening SOCK_SEQPACKET socket in the abstract namespace (scoped to the network
// namespace, gone with the process): -1, *error and *status (AddressInUse when the name is taken).
int listenAbstract(const std::string& name, std::string* error, Status* status);
// A connected socket to the listener of that name; -1 when nothing listens there.
int dialAbstract(const std::string& name);
// One message with fds attached (SCM_RIGHTS). False unless all of it was sent.
bool sendMessage(int fd, const std::vector<uint8_t>& bytes, const int* fds = nullptr, size_t nfds = 0);
// One message into buf (at most cap bytes), the fds it carried appended to *fds (close-on-exec).
// Returns its length, 0 when the peer closed, -1 with errno (EAGAIN: nothing yet). A message
// longer than cap comes back truncated as cap + 1.
ssize_t receiveMessage(int fd, uint8_t* buf, size_t cap, std::vector<int>* fds);
// The kernel's word on who is at the other end of a unix socket.
bool peerCredentials(int fd, pid_t* pid, uid_t* uid);

// "" when fd is a peer's memfd that no mapping of it can fault on: a regular file of exactly
// `bytes` on tmpfs (not hugetlbfs, whose holes fault when no huge page is free), sealed against
// shrinking; else why not.
std::string checkSealedMemfd(int fd, uint64_t bytes);

// The shared segment: a sealed memfd (it can never shrink, so a mapping never faults), mapped
// shared and writable.
class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  bool create(uint64_t bytes, std::string* error);
  // Maps a peer's memfd after checking that it is sealed against shrinking and has `bytes`.
  bool adopt(int fd, uint64_t bytes, std::string* error);
  uint8_t* base() const { return base_; }
  int fd() const { return fd_; }
  // The fd was passed on: closing it here leaves the mapping.
  void closeFd();

 private:
  bool map(std::string* error);
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
};

int makeEventFd();
bool isEventFd(int fd);
// Wakes whoever polls the eventfd (one write; a full counter means it is awake anyway).
void kick(int fd);
// Empties the eventfd's counter.
void drainEventFd(int fd);

enum class Pull { Ok, PeerGone, Refused };
// Copies len bytes at src in process pid into dst (process_vm_readv, in pieces as the kernel
// returns them). Refused: the address is not the peer's to lend, or CMA is not permitted.
Pull pull(pid_t pid, uint8_t* dst, uint64_t src, uint64_t len);
// The other way (process_vm_writev): len bytes from src here to dst in process pid.
Pull push(pid_t pid, uint64_t dst, const uint8_t* src, uint64_t len);

}  // namespace rvma::shm
