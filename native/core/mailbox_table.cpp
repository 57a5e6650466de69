#include "mailbox_table.h"

#include <cstring>

namespace rvma {

MailboxTable::~MailboxTable() = default;

Mailbox* MailboxTable::find(uint64_t vaddr) {
  auto it = open_.find(vaddr);
  return it == open_.end() ? nullptr : it->second.get();
}

Status MailboxTable::open(uint64_t vaddr, const MailboxConfig& cfg, OpenedMailbox* out) {
  if (vaddr == 0 || cfg.maxBuffers == 0) return Status::InvalidArgument;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = open_.try_emplace(vaddr);
  if (!inserted) return Status::MailboxExists;
  uint32_t slot = words_.allocate();
  uint32_t id = nextId_++;
  if (nextId_ == 0) nextId_ = 1;
  it->second = std::make_unique<Mailbox>(vaddr, id, slot, words_.words(slot), cfg);
  *out = OpenedMailbox{id, slot};
  return Status::Ok;
}

Status MailboxTable::close(uint64_t vaddr, bool* released) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(vaddr);
  if (it == open_.end()) return Status::NoMailbox;
  std::unique_ptr<Mailbox> mb = std::move(it->second);
  open_.erase(it);
  mb->close();
  *released = mb->inflight() == 0;
  if (*released) {
    words_.release(mb->slot());
  } else {
    Mailbox* key = mb.get();
    draining_.emplace(key, std::move(mb));
  }
  return Status::Ok;
}

void MailboxTable::closeAll() {
  std::unique_lock<std::mutex> lock(mu_);
  for (auto& [vaddr, mb] : open_) {
    mb->close();
    if (mb->inflight() == 0) {
      words_.release(mb->slot());
    } else {
      Mailbox* key = mb.get();
      draining_.emplace(key, std::move(mb));
    }
  }
  open_.clear();
  // Writers hold reservations only for the length of a copy or a socket read.
  drained_.wait(lock, [this] { return draining_.empty(); });
}

Status MailboxTable::post(uint64_t vaddr, uint8_t* data, uint64_t size, uint64_t threshold, uint64_t memory,
                          uint64_t* indexOut) {
  std::lock_guard<std::mutex> lock(mu_);
  Mailbox* mb = find(vaddr);
  return mb ? mb->post(data, size, threshold, memory, indexOut) : Status::NoMailbox;
}

Status MailboxTable::incEpoch(uint64_t vaddr) {
  std::lock_guard<std::mutex> lock(mu_);
  Mailbox* mb = find(vaddr);
  if (!mb) return Status::NoMailbox;
  std::vector<CompletionRecord> retired;
  Status s = mb->incEpoch(retired);
  if (!retired.empty()) events_.completions(retired);
  return s;
}

Status MailboxTable::setAccess(uint64_t vaddr, AccessPolicy access) {
  std::lock_guard<std::mutex> lock(mu_);
  Mailbox* mb = find(vaddr);
  if (!mb) return Status::NoMailbox;
  mb->setAccess(std::move(access));
  return Status::Ok;
}

Status MailboxTable::reserve(uint64_t vaddr, const Placement& where, uint64_t len, std::string_view sender, Reservation* out) {
  std::lock_guard<std::mutex> lock(mu_);
  return reserveLocked(vaddr, where, len, sender, out);
}

Status MailboxTable::reserveLocked(uint64_t vaddr, const Placement& where, uint64_t len, std::string_view sender,
                                   Reservation* out) {
  Mailbox* mb = find(vaddr);
  if (!mb) return Status::NoMailbox;
  if (!mb->permits(sender)) return Status::Forbidden;
  Status s = mb->reserve(where, len, out);
  if (ok(s) && mb->reportsSender()) out->buffer->lastSender.assign(sender.data(), sender.size());
  return s;
}

void MailboxTable::commit(const Reservation& r, uint64_t ops) { finish(r, true, ops); }
void MailboxTable::cancel(const Reservation& r) { finish(r, false, 0); }

// Events are queued under the lock so records of one mailbox reach JS in epoch order
// whichever thread ended the epoch; the sink only appends and never blocks.
void MailboxTable::finish(const Reservation& r, bool commit, uint64_t ops) {
  std::lock_guard<std::mutex> lock(mu_);
  finishLocked(r, commit, ops);
}

void MailboxTable::finishLocked(const Reservation& r, bool commit, uint64_t ops) {
  Mailbox* mb = r.mailbox;
  std::vector<CompletionRecord> retired;
  if (commit) mb->commit(r, ops, retired); else mb->cancel(r, retired);
  if (!retired.empty()) events_.completions(retired);
  if (mb->closed() && mb->inflight() == 0) {
    events_.mailboxReleased(mb->id());
    words_.release(mb->slot());
    draining_.erase(mb);
    if (draining_.empty()) drained_.notify_all();
  }
}

// A large payload is copied outside the lock, so that posts and other writers go on meanwhile.
Status MailboxTable::deliver(uint64_t vaddr, const Placement& where, const uint8_t* data, uint64_t len, std::string_view sender) {
  Reservation r;
  if (len > kCopyUnderLockMax) {
    Status s = reserve(vaddr, where, len, sender, &r);
    if (!ok(s)) return s;
    std::memcpy(r.dst, data, len);
    commit(r);
    return Status::Ok;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Status s = reserveLocked(vaddr, where, len, sender, &r);
  if (!ok(s)) return s;
  if (len) std::memcpy(r.dst, data, len);
  finishLocked(r, true, 1);
  return Status::Ok;
}

size_t MailboxTable::openCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return open_.size();
}

std::shared_ptr<CompletionPage> MailboxTable::completionPage(uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  return words_.page(index);
}

}  // namespace rvma
