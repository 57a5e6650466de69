// One RVMA mailbox: a FIFO of receiver-owned buffers, a counter and an epoch number.
// Not thread-safe on its own: MailboxTable serialises every call under its lock.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "access.h"
#include "status.h"

namespace rvma {

enum class EpochType : uint8_t { Bytes = 0, Ops = 1 };

struct MailboxConfig {
  EpochType epochType = EpochType::Bytes;
  uint64_t threshold = 0;  // 0: the buffer's size (bytes epochs) or 1 (ops epochs)
  uint32_t maxBuffers = 16;
  AccessPolicy access{};
  bool reportSender = false;  // completions name the node whose put was last admitted to the buffer
  // A buffer whose epoch ended is posted again at once, at the tail: for a mailbox whose
  // completions native code reads during the completion (CompletionClaim), which cannot post.
  bool recycle = false;
};

// Where a put lands: at an explicit offset, or appended after what earlier puts reserved.
struct Placement {
  bool append = false;
  uint64_t offset = 0;
};

struct CompletionRecord {
  uint32_t mailboxId;
  uint64_t vaddr, epoch, bufferIndex, bytes, ops;
  std::string sender;  // with MailboxConfig::reportSender; else empty
  uint8_t* data = nullptr;  // the retired buffer (for a mailbox whose completions are claimed natively)
};

struct PostedBuffer {
  uint8_t* data;
  uint64_t size;
  uint64_t threshold;
  uint64_t index;
  uint64_t memory = 0;  // names the JS memory holding data (see PutRequest::memory)
  uint64_t bytes = 0, ops = 0;
  uint64_t appendOffset = 0;
  uint64_t reservedBytes = 0, reservedOps = 0;  // counted at reserve, so a full buffer takes no more
  uint32_t inflight = 0;  // reserved puts whose payload is still being written
  std::string lastSender{};  // reportSender: the node of the last put admitted
  bool closing = false;   // takes no new puts; retires once inflight reaches 0
  PostedBuffer* next = nullptr;
};

class Mailbox;

// A put's claim on a range of a buffer, held while its payload is copied in (outside the
// table lock). The mailbox and buffer stay alive until the reservation is committed or cancelled.
struct Reservation {
  Mailbox* mailbox = nullptr;
  PostedBuffer* buffer = nullptr;
  uint8_t* dst = nullptr;
  uint64_t len = 0;
};

class Mailbox {
 public:
  Mailbox(uint64_t vaddr, uint32_t id, uint32_t slot, uint32_t* words, const MailboxConfig& cfg);
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  uint64_t vaddr() const { return vaddr_; }
  uint32_t id() const { return id_; }
  uint32_t slot() const { return slot_; }
  uint32_t inflight() const { return inflight_; }
  bool closed() const { return closed_; }
  bool permits(std::string_view sender) const { return access_.permits(sender); }
  void setAccess(AccessPolicy access) { access_ = std::move(access); }
  bool reportsSender() const { return reportSender_; }

  Status post(uint8_t* data, uint64_t size, uint64_t threshold, uint64_t memory, uint64_t* indexOut);
  Status reserve(const Placement& where, uint64_t len, Reservation* out);
  // Counts the reserved bytes as `ops` puts (1 per put, even one placed in parts), then
  // retires every buffer whose epoch ended, in FIFO order.
  void commit(const Reservation& r, uint64_t ops, std::vector<CompletionRecord>& retired);
  void cancel(const Reservation& r, std::vector<CompletionRecord>& retired);
  Status incEpoch(std::vector<CompletionRecord>& retired);
  void close() { closed_ = true; }

 private:
  PostedBuffer* current() const;  // first buffer still taking puts
  bool epochEnded(const PostedBuffer* b) const;
  bool reservedFull(const PostedBuffer* b) const;
  void retireReady(std::vector<CompletionRecord>& retired);

  uint64_t vaddr_;
  uint64_t threshold_;
  uint64_t epoch_ = 0;
  uint64_t nextIndex_ = 0;
  PostedBuffer* head_ = nullptr;
  PostedBuffer* tail_ = nullptr;
  uint32_t* words_;
  uint32_t id_;
  uint32_t slot_;
  uint32_t inflight_ = 0;
  uint32_t buffers_ = 0;
  uint32_t maxBuffers_;
  EpochType type_;
  AccessPolicy access_;
  bool reportSender_;
  bool recycle_;
  bool closed_ = false;
};

}  // namespace rvma
