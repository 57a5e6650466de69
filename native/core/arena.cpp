#include "arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace rvma {

Arena& Arena::shared() {
  static Arena* arena = new Arena();
  return *arena;
}

bool Arena::suits(uint64_t bytes) {
  static const bool sharedHugePages = [] {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
    std::string line;
    std::getline(in, line);
    return !line.empty() && line.find("[never]") == std::string::npos && line.find("[deny]") == std::string::npos;
  }();
  return bytes >= kMinBlockBytes && (bytes < kHugeBytes || sharedHugePages);
}

bool Arena::create() {
  if (failed_) return false;
  if (base() != 0) return true;
  failed_ = true;
  int fd = memfd_create("rvma-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return false;
  // Sparse: pages exist only once written. Sealed at this size, a peer's mapping never faults.
  if (ftruncate(fd, off_t(kSpanBytes)) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, kSpanBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return false;
  }
  failed_ = false;
  free_[0] = kSpanBytes;
  fd_.store(fd, std::memory_order_release);
  base_.store(reinterpret_cast<uint64_t>(p), std::memory_order_release);
  return true;
}

void* Arena::take(uint64_t bytes, uint64_t align, bool* zeroed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes == 0 || used_ + bytes > limit_ || !create()) return nullptr;
  const uint64_t base = this->base();
  if (uint64_t kept = takeKept(bytes, align)) {
    used_ += bytes;
    *zeroed = false;
    return reinterpret_cast<void*>(base + kept - 1);
  }
  // First fit. The mapping starts on a page boundary only, so alignment is of the address.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = it->first, len = it->second;
    const uint64_t at = ((base + start + align - 1) / align * align) - base;
    if (at + bytes > start + len) continue;
    free_.erase(it);
    if (at > start) free_[start] = at - start;
    if (at + bytes < start + len) free_[at + bytes] = start + len - (at + bytes);
    used_ += bytes;
    *zeroed = true;
    return reinterpret_cast<void*>(base + at);
  }
  return nullptr;
}

// Offsets are returned plus one, so that 0 can say "none".
uint64_t Arena::takeKept(uint64_t bytes, uint64_t align) {
  auto it = kept_.find(bytes);
  if (it == kept_.end()) return 0;
  auto& offsets = it->second;
  for (size_t i = offsets.size(); i-- > 0;) {
    const uint64_t offset = offsets[i];
    if ((base() + offset) % align != 0) continue;
    offsets.erase(offsets.begin() + long(i));
    if (offsets.empty()) kept_.erase(it);
    keptBytes_ -= bytes;
    return offset + 1;
  }
  return 0;
}

bool Arena::give(void* block, uint64_t bytes) {
  if (!contains(block, bytes)) return false;
  const uint64_t offset = reinterpret_cast<uint64_t>(block) - base();
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= bytes;
    kept_[bytes].push_back(offset);
    keptBytes_ += bytes;
    if (keptBytes_ <= kKeptBytes) return true;
  }
  trimKept();
  return true;
}

void Arena::trimKept() {
  std::vector<std::pair<uint64_t, uint64_t>> punch;  // offset, length
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The largest blocks first: the fewest calls for the most memory.
    while (keptBytes_ > kKeptBytes) {
      auto it = std::prev(kept_.end());
      punch.emplace_back(it->second.front(), it->first);
      it->second.erase(it->second.begin());
      keptBytes_ -= it->first;
      if (it->second.empty()) kept_.erase(it);
    }
  }
  // The pages go back to the system before anyone can take the range again (and read as zeros).
  for (auto [offset, len] : punch) fallocate(fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(offset), off_t(len));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto [offset, len] : punch) release(offset, len);
}

void Arena::release(uint64_t offset, uint64_t bytes) {
  auto next = free_.lower_bound(offset);
  uint64_t start = offset, len = bytes;
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && next->first == offset + bytes) {
    len += next->second;
    free_.erase(next);
  }
  free_[start] = len;
}

bool Arena::contains(const void* p, uint64_t len) const {
  const uint64_t base = this->base(), at = reinterpret_cast<uint64_t>(p);
  return base != 0 && at >= base && len <= kSpanBytes && at - base <= kSpanBytes - len;
}

void Arena::setLimit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = bytes < kSpanBytes ? bytes : kSpanBytes;
}

ArenaStats Arena::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return {used_, limit_, kSpanBytes};
}

}  // namespace rvma
