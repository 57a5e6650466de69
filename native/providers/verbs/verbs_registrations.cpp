#include "verbs_registrations.h"

#include <algorithm>
#include <cerrno>

namespace rvma::verbs {

namespace {
// Sources are read by peers, mailbox buffers written by local reads; one buffer is often both
// (a stage that forwards what it received), so one registration serves both.
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
}  // namespace

RegistrationCache::Entry* RegistrationCache::find(uintptr_t begin, uintptr_t end, uint64_t memory) {
  auto it = byMemory_.find(memory);
  if (it == byMemory_.end()) return nullptr;
  for (auto& e : it->second) {
    if (!e->gone && e->begin <= begin && end <= e->end) return e.get();
  }
  return nullptr;
}

RegistrationCache::Entry* RegistrationCache::acquire(const uint8_t* addr, uint64_t len, uint64_t memory) {
  const uintptr_t begin = uintptr_t(addr), end = begin + len;
  if (Entry* e = find(begin, end, memory)) {
    unlist(e);
    e->refs++;
    counters_.reused++;
    return e;
  }
  ibv_mr* mr = registerRange(addr, len);
  if (!mr) return nullptr;
  auto owned = std::make_unique<Entry>();
  Entry* e = owned.get();
  e->mr.reset(mr);
  e->memory = memory;
  e->begin = begin;
  e->end = end;
  e->refs = 1;
  byMemory_[memory].push_back(std::move(owned));
  counters_.registered++;
  counters_.cachedBytes += len;
  return e;
}

// A refusal may only mean that idle registrations hold the locked-memory budget: retry without them.
ibv_mr* RegistrationCache::registerRange(const uint8_t* addr, uint64_t len) {
  ibv_mr* mr = ibv_reg_mr(pd_, const_cast<uint8_t*>(addr), len, kAccess);
  if (mr || idle_.empty()) return mr;
  int err = errno;
  trim(0);
  mr = ibv_reg_mr(pd_, const_cast<uint8_t*>(addr), len, kAccess);
  if (!mr) errno = err;
  return mr;
}

void RegistrationCache::release(Entry* e) {
  if (--e->refs > 0) return;
  if (!e->memory || e->gone || idleBudget_ == 0) return drop(e);
  e->idle = idle_.insert(idle_.end(), e);
  e->listed = true;
  idleBytes_ += e->end - e->begin;
  trim(idleBudget_);
}

void RegistrationCache::forget(uint64_t memory) {
  auto it = byMemory_.find(memory);
  if (it == byMemory_.end() || memory == 0) return;
  std::vector<Entry*> unused;
  for (auto& e : it->second) {
    e->gone = true;
    if (e->refs == 0) unused.push_back(e.get());
  }
  for (Entry* e : unused) drop(e);
}

void RegistrationCache::trim(uint64_t budget) {
  while (idleBytes_ > budget) {
    counters_.evicted++;
    drop(idle_.front());
  }
}

void RegistrationCache::clear() {
  for (auto& [memory, entries] : byMemory_) {
    for (auto& e : entries) counters_.cachedBytes -= e->end - e->begin;
  }
  byMemory_.clear();
  idle_.clear();
  idleBytes_ = 0;
}

void RegistrationCache::unlist(Entry* e) {
  if (!e->listed) return;
  idle_.erase(e->idle);
  e->listed = false;
  idleBytes_ -= e->end - e->begin;
}

// The device forgets the memory (ibv_dereg_mr, by the entry's MrPtr) before the entry goes.
void RegistrationCache::drop(Entry* e) {
  unlist(e);
  counters_.cachedBytes -= e->end - e->begin;
  auto it = byMemory_.find(e->memory);
  auto& entries = it->second;
  entries.erase(std::find_if(entries.begin(), entries.end(), [e](const auto& p) { return p.get() == e; }));
  if (entries.empty()) byMemory_.erase(it);
}

}  // namespace rvma::verbs
