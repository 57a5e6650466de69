#include "shm_channel.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace rvma::shm {

namespace {

socklen_t abstractAddress(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  size_t n = std::min(name.size(), sizeof addr->sun_path - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);  // sun_path[0] == 0: the abstract namespace
  return socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n);
}

constexpr size_t kMaxFds = 4;

}  // namespace

int listenAbstract(const std::string& name, std::string* error, Status* status) {
  sockaddr_un addr;
  socklen_t len = abstractAddress(name, &addr);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 512) != 0) {
    *error = "cannot listen on shm://" + name + ": " + std::strerror(errno);
    *status = listenFailure(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

int dialAbstract(const std::string& name) {
  sockaddr_un addr;
  socklen_t len = abstractAddress(name, &addr);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool sendMessage(int fd, const std::vector<uint8_t>& bytes, const int* fds, size_t nfds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (nfds) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  ssize_t n;
  do n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == ssize_t(bytes.size());
}

ssize_t receiveMessage(int fd, uint8_t* buf, size_t cap, std::vector<int>* fds) {
  iovec iov{buf, cap};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
      fds->push_back(received);
    }
  }
  // More fds than fit, or more bytes than cap: the kernel dropped some; say so.
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return ssize_t(cap) + 1;
  return n;
}

bool peerCredentials(int fd, pid_t* pid, uid_t* uid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) return false;
  *pid = cred.pid;
  *uid = cred.uid;
  return true;
}

Segment::~Segment() {
  if (base_) munmap(base_, bytes_);
  closeFd();
}

void Segment::closeFd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool Segment::create(uint64_t bytes, std::string* error) {
  fd_ = memfd_create("rvma-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  bytes_ = bytes;
  if (fd_ < 0 || ftruncate(fd_, off_t(bytes)) != 0 ||
      fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    *error = std::string("cannot create a shared segment: ") + std::strerror(errno);
    return false;
  }
  return map(error);
}

std::string checkSealedMemfd(int fd, uint64_t bytes) {
  struct stat st{};
  struct statfs fs{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) != bytes) return "it is not a file of the announced size";
  if (fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC) return "it is not a shmem memfd";
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) return "it is not sealed against shrinking";
  return "";
}

bool Segment::adopt(int fd, uint64_t bytes, std::string* error) {
  fd_ = fd;
  bytes_ = bytes;
  std::string why = checkSealedMemfd(fd, bytes);
  if (!why.empty()) {
    *error = "shm hello: the segment passed is refused: " + why;
    return false;
  }
  return map(error);
}

bool Segment::map(std::string* error) {
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    *error = std::string("cannot map the shared segment: ") + std::strerror(errno);
    return false;
  }
  base_ = static_cast<uint8_t*>(p);
  return true;
}

int makeEventFd() { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

bool isEventFd(int fd) {
  char link[64];
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
  return n > 0 && std::string(link, size_t(n)) == "anon_inode:[eventfd]";
}

void kick(int fd) {
  uint64_t one = 1;
  ssize_t n = write(fd, &one, sizeof one);
  (void)n;  // EAGAIN: the counter is full, the poller is due to wake anyway
}

void drainEventFd(int fd) {
  uint64_t count;
  ssize_t n = read(fd, &count, sizeof count);
  (void)n;
}

// process_vm_readv (read) or process_vm_writev, in pieces as the kernel returns them.
static Pull crossMemory(bool read, pid_t pid, uint8_t* local, uint64_t remote, uint64_t len) {
  uint64_t done = 0;
  while (done < len) {
    iovec here{local + done, size_t(len - done)};
    iovec there{reinterpret_cast<void*>(remote + done), size_t(len - done)};
    ssize_t n = read ? process_vm_readv(pid, &here, 1, &there, 1, 0) : process_vm_writev(pid, &here, 1, &there, 1, 0);
    if (n > 0) {
      done += uint64_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == ESRCH ? Pull::PeerGone : Pull::Refused;
  }
  return Pull::Ok;
}

Pull pull(pid_t pid, uint8_t* dst, uint64_t src, uint64_t len) { return crossMemory(true, pid, dst, src, len); }

Pull push(pid_t pid, uint64_t dst, const uint8_t* src, uint64_t len) {
  return crossMemory(false, pid, const_cast<uint8_t*>(src), dst, len);  // writev only reads `here`
}

}  // namespace rvma::shm
