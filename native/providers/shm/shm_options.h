#pragma once
#include <cstdint>
#include <string>

namespace rvma {

// Whether a far put into a posted buffer in our arena is copied by its sender (a write grant),
// where the sender may reach our memory anyway, instead of pulled. A grant costs a round trip
// more than a pull (two more wake-ups): Streaming grants only a put with more records behind it
// in the ring, whose sender is busy anyway, so that a lone put's latency stays a pull's.
enum class SenderWrites { Never, Streaming, Always };

struct ShmOptions {
  std::string name;                // the abstract socket name listened on; "" picks one
  bool cma = true;                 // pull large puts with process_vm_readv where the peer permits it
  SenderWrites senderWrites = SenderWrites::Streaming;
  // ...from this size on. With the processes on two CPUs, puts of 384 KiB went at 7.4 GB/s
  // granted (always) against 8.5 pulled, 512 KiB evenly, 1 MiB at 10.7 against 8.6 (bench:shm
  // --placement split --sizes, variants always and pulled); on one CPU grants won from 72 KiB.
  uint64_t senderWritesMinBytes = 512ull << 10;
  uint64_t ringBytes = 1ull << 20;       // each direction's ring (a power of two)
  // Larger puts are pulled by the receiver (or chunked). Inline, a 64 KiB put went 30% faster
  // than pulled with both processes on one CPU, and as fast across CPUs (bench:shm, bw64k).
  uint64_t eagerMaxBytes = 64ull << 10;
  uint64_t maxPutBytes = 1ull << 32;     // larger puts are refused (TooLarge)
  uint32_t connectTimeoutMs = 5000;
  uint32_t busyPollUs = 0;               // thread progress: poll the rings this long before sleeping
};

// "shm://NAME" -> NAME; false unless NAME is 1..100 characters of [A-Za-z0-9._-].
inline bool parseShmAddress(const std::string& address, std::string* name) {
  if (address.compare(0, 6, "shm://") != 0) return false;
  std::string n = address.substr(6);
  if (n.empty() || n.size() > 100) return false;
  for (char c : n) {
    bool okChar = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == '-';
    if (!okChar) return false;
  }
  *name = n;
  return true;
}

}  // namespace rvma
