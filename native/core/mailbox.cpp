#include "mailbox.h"

#include "completion_words.h"

namespace rvma {

Mailbox::Mailbox(uint64_t vaddr, uint32_t id, uint32_t slot, uint32_t* words, const MailboxConfig& cfg)
    : vaddr_(vaddr), threshold_(cfg.threshold), words_(words), id_(id), slot_(slot), maxBuffers_(cfg.maxBuffers),
      type_(cfg.epochType), access_(cfg.access), reportSender_(cfg.reportSender), recycle_(cfg.recycle) {}

Mailbox::~Mailbox() {
  while (head_) {
    PostedBuffer* next = head_->next;
    delete head_;
    head_ = next;
  }
}

Status Mailbox::post(uint8_t* data, uint64_t size, uint64_t threshold, uint64_t memory, uint64_t* indexOut) {
  if (closed_) return Status::Closed;
  if (buffers_ >= maxBuffers_) return Status::TooManyBuffers;
  if (threshold == 0) threshold = threshold_;
  if (threshold == 0) threshold = type_ == EpochType::Bytes ? size : 1;
  if (type_ == EpochType::Bytes && threshold > size) return Status::InvalidArgument;
  auto* b = new PostedBuffer{data, size, threshold, nextIndex_++, memory};
  if (tail_) tail_->next = b; else head_ = b;
  tail_ = b;
  buffers_++;
  *indexOut = b->index;
  return Status::Ok;
}

// Puts still being written count too: with several arriving at once, a buffer whose
// reservations already reach the threshold sends the next put to the following buffer.
PostedBuffer* Mailbox::current() const {
  PostedBuffer* b = head_;
  while (b && (b->closing || reservedFull(b))) b = b->next;
  return b;
}

bool Mailbox::reservedFull(const PostedBuffer* b) const {
  return (type_ == EpochType::Bytes ? b->reservedBytes : b->reservedOps) >= b->threshold;
}

bool Mailbox::epochEnded(const PostedBuffer* b) const {
  return (type_ == EpochType::Bytes ? b->bytes : b->ops) >= b->threshold;
}

Status Mailbox::reserve(const Placement& where, uint64_t len, Reservation* out) {
  if (closed_) return Status::Closed;
  PostedBuffer* b = current();
  if (!b) return Status::NoBuffer;
  if (len > b->size) return Status::TooLarge;
  uint64_t offset = where.append ? b->appendOffset : where.offset;
  if (offset > b->size || len > b->size - offset) return Status::OutOfBounds;
  if (where.append) b->appendOffset = offset + len;
  b->reservedBytes += len;
  b->reservedOps += 1;
  b->inflight++;
  inflight_++;
  *out = Reservation{this, b, b->data + offset, len};
  return Status::Ok;
}

void Mailbox::commit(const Reservation& r, uint64_t ops, std::vector<CompletionRecord>& retired) {
  PostedBuffer* b = r.buffer;
  b->inflight--;
  inflight_--;
  b->bytes += r.len;
  b->ops += ops;
  if (epochEnded(b)) b->closing = true;
  retireReady(retired);
}

void Mailbox::cancel(const Reservation& r, std::vector<CompletionRecord>& retired) {
  // The buffer may take puts again; an appended range is not reused (it stays a hole).
  r.buffer->reservedBytes -= r.len;
  r.buffer->reservedOps -= 1;
  r.buffer->inflight--;
  inflight_--;
  retireReady(retired);
}

Status Mailbox::incEpoch(std::vector<CompletionRecord>& retired) {
  if (closed_) return Status::Closed;
  PostedBuffer* b = head_;  // the epoch in progress, even if its reservations are full
  while (b && b->closing) b = b->next;
  if (!b) return Status::NoBuffer;
  b->closing = true;
  retireReady(retired);
  return Status::Ok;
}

// Retires from the head only, so records come out in the order buffers were posted even
// when a later buffer's puts finish first.
void Mailbox::retireReady(std::vector<CompletionRecord>& retired) {
  if (closed_) return;
  while (head_ && head_->closing && head_->inflight == 0) {
    PostedBuffer* b = head_;
    head_ = b->next;
    if (!head_) tail_ = nullptr;
    buffers_--;
    epoch_++;
    CompletionWords::write(words_, epoch_, b->index, b->bytes, b->ops);
    retired.push_back(CompletionRecord{id_, vaddr_, epoch_, b->index, b->bytes, b->ops, std::move(b->lastSender), b->data});
    if (recycle_) {
      // Read during this completion, under the table's lock: no put can reach it before.
      *b = PostedBuffer{b->data, b->size, b->threshold, nextIndex_++, b->memory};
      if (tail_) tail_->next = b; else head_ = b;
      tail_ = b;
      buffers_++;
      continue;
    }
    delete b;
  }
}

}  // namespace rvma
