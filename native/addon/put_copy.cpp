#include "put_copy.h"

#include <new>

#include "buffer_pool.h"

namespace rvma::addon {
namespace {

// Copies a put's payload. A larger one goes into a pooled block, given back when the put
// settles: a fresh heap block per put is faulted in page by page (a copied 16 KiB ring frame
// spent more time in page faults than in the copy).
void copyPayload(PutRequest& req) {
  if (req.len <= 4096) return req.own();
  auto* block = static_cast<uint8_t*>(BufferPool::shared().take(req.len, false));
  if (!block) throw std::bad_alloc();
  req.copyTo(block);
  const uint64_t len = req.len;
  req.joined = std::shared_ptr<const uint8_t>(block, [len](const uint8_t* p) { BufferPool::shared().give(const_cast<uint8_t*>(p), len); });
  req.data = block;
  req.head = nullptr;
  req.headLen = 0;
  req.memory = 0;
}

}  // namespace

void copyIfKept(PutRequest& req) {
  req.memory = 0;
  req.keeper = copyPayload;
}

}  // namespace rvma::addon
