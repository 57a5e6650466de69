// libFuzzer harness: the shm provider's receive path driven by a hostile peer. The harness
// dials a real ShmProvider (loop progress, driven by hand on this thread), completes the
// handshake with a segment of its own, then writes whatever the input says into the ring the
// provider reads and into the words it shares (tails, heads, flags), answers or mangles the
// provider's own puts, and hangs up. A second mode feeds the input to the hello decoder.
// With peer authentication, the harness's hellos carry the auth flag, a nonce and a proof
// (right, or wrong: input bytes), or a refusal; operations may run before the Confirm.
//
// Input: byte 0: bit 7 set: the rest is a hello message (decoded as each kind; whatever
// decodes must re-encode to the same bytes). Else bit 0: the provider may pull (CMA), bit 1:
// we tell it we pull, bit 2: the provider has an auth secret, bit 3: we authenticate (the
// Offer's nonce: the next 32 bytes), bit 4: our Confirm's proof is made with the provider's
// secret (else it is the next 32 bytes), bit 5: our Confirm refuses the provider, bit 6:
// the next byte n, then n % 8 operations between the Accept and our Confirm.
// Then operations, one byte each (kind = low 3 bits), with operands:
//   0 raw bytes into the ring at our tail: next byte n, then 8 * (n % 64 + 1) bytes, published
//   1 a well-formed record: next byte picks Put / FarPut / ChunkPut / Ack / Pad / RawNotice /
//     RegionQuery / Revoke / RevokeAck / FarGatherPut / Written / Grant, then fields (a far put
//     with the arena flag names our arena; a put to the arena box, whose buffers lie in the
//     provider's arena, is granted to us, and Written says we wrote it; a Grant names a range
//     of our arena for one of the provider's puts), or an arena share on the socket: next byte
//     picks ours, sealed (sent once or twice), or a hostile one (unsealed, another size, two
//     fds, none, garbage bytes, an eventfd), or a hole punched in ours after sharing it
//   2 set our published tail to the next 8 bytes      3 consume the provider's ring (or mangle its head)
//   4 the provider puts to us (16 bytes; with bit 3, 4 KiB: a far put; ours to answer)
//   5 let the provider run
//   6 hang up                                          7 scribble the next byte over a control word
//
// Checks: no byte lands outside a posted buffer or the region (canaries; ASan sees the rest),
// every put of the provider's own is reported exactly once, no reservation outlives the
// connection (the final closeAll would wait forever: libFuzzer reports the hang), a hostile
// arena share closes the connection (never maps, never faults), and whatever hello or arena
// share decodes re-encodes to the same bytes. Authentication: an Accept's proof
// verifies; a mismatch is refused at the Offer, a wrong proof after the Confirm (a refused
// Accept), each reported as exactly one authFailed; and a refused peer places nothing,
// whatever it wrote into the rings before or after (every buffer byte keeps its pattern).
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "harness_support.h"
#include "native/core/arena.h"
#include "native/providers/shm/shm_arena_share.h"
#include "native/providers/shm/shm_channel.h"
#include "native/providers/shm/shm_hello.h"
#include "native/providers/shm/shm_provider.h"
#include "native/providers/shm/shm_ring.h"

using namespace rvma;
using rvma::fuzz::Guarded;
using rvma::fuzz::Poller;
using rvma::fuzz::require;
using namespace rvma::shm;

namespace {

constexpr uint64_t kBytesBox = 0x10000;  // bytes epochs of 256-byte buffers
constexpr uint64_t kOpsBox = 0x10001;    // ops epochs of 3 puts, 64 KiB buffers
constexpr uint64_t kGuardedBox = 0x10002;  // allows another node only: every put to it is refused
constexpr uint64_t kArenaBox = 0x10003;    // ops epochs of 1 put, 64 KiB buffers in the provider's arena
constexpr uint64_t kTheirBox = 0x20000;
constexpr uint64_t kRing = kMinRingBytes;
constexpr size_t kMaxPosts = 64;
constexpr uint64_t kMaxOwnPuts = 32;
constexpr const char* kSecret = "the fuzz harness's shared secret";
constexpr auth::Context kAuthContext{"shm", kVersion};

struct Mode {
  explicit Mode(uint8_t b)
      : cma(b & 1), claimPull(b & 2), providerAuth(b & 4), weAuth(b & 8), rightProof(b & 16), refuse(b & 32),
        earlyOps(b & 64) {}
  bool cma, claimPull, providerAuth, weAuth, rightProof, refuse, earlyOps;
};

class Sink : public EventSink {
 public:
  std::map<uint64_t, int> answers;
  uint64_t regionBytes = 0;
  int authFailures = 0;
  uint64_t placed = 0;  // completions and raw writes reported
  std::vector<uint64_t> retired;  // vaddrs whose buffer retired
  void completions(const std::vector<CompletionRecord>& records) override {
    for (const auto& r : records) retired.push_back(r.vaddr);
    placed += records.size();
  }
  void mailboxReleased(uint32_t) override {}
  void putSettled(uint64_t putId, Status, const std::string&) override { answers[putId]++; }
  void connected(uint64_t, Status, const std::string&) override {}
  void peerLost(const std::string&, uint64_t, const std::string&) override {}
  void rawWritten(uint32_t, uint64_t offset, uint64_t len) override {
    require(offset + len <= regionBytes);
    placed++;
  }
  void regionReleased(uint32_t) override {}
  void protocolError(const std::string&, const std::string&) override {}
  void authFailed(const std::string&, const std::string&) override { authFailures++; }
};

// Whether nothing was ever written into m: every byte still has Guarded's pattern.
bool untouched(Guarded& m) {
  const uint8_t* p = m.data();
  for (size_t i = 0; i < m.size(); i++) {
    if (p[i] != 0xa5) return false;
  }
  return true;
}

// Whatever decodes re-encodes to the very bytes.
void fuzzHello(const uint8_t* data, size_t size) {
  for (HelloKind kind : {HelloKind::Offer, HelloKind::Accept, HelloKind::Confirm}) {
    Hello h;
    if (!decodeHello(data, size, kind, &h).empty()) continue;
    std::vector<uint8_t> again = encodeHello(h);
    require(again.size() == size && std::memcmp(again.data(), data, size) == 0);
  }
  ArenaShare share;
  if (decodeArenaShare(data, size, &share).empty()) {
    std::vector<uint8_t> again = encodeArenaShare(share);
    require(again.size() == size && std::memcmp(again.data(), data, size) == 0);
  }
}

// A sealed memfd of `bytes` (sealed: false leaves it unsealed), mapped writable at *base.
int makeMemfd(uint64_t bytes, bool sealed, uint8_t** base) {
  int fd = memfd_create("fuzz-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  require(fd >= 0 && ftruncate(fd, off_t(bytes)) == 0);
  if (sealed) require(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
  if (base) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    require(p != MAP_FAILED);
    *base = static_cast<uint8_t*>(p);
  }
  return fd;
}

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool more() const { return p_ < end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  uint64_t word(size_t n = 8) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= uint64_t(byte()) << (8 * i);
    return v;
  }
  size_t take(uint8_t* out, size_t n) {
    size_t k = std::min<size_t>(n, size_t(end_ - p_));
    std::memcpy(out, p_, k);
    std::memset(out + k, 0, n - k);
    p_ += k;
    return k;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

class Harness {
 public:
  explicit Harness(Mode mode)
      : mode_(mode), auth_(mode.providerAuth ? kSecret : ""), table_(sink_), regions_(sink_), progress_(ProgressMode::Loop) {
    progress_.usePoller(&poller_);
    ShmOptions options;
    options.name = "rvma-fuzz-" + std::to_string(getpid());
    options.cma = mode.cma;
    options.ringBytes = kRing;
    options.eagerMaxBytes = 1024;
    options.maxPutBytes = 1 << 20;
    options.senderWrites = SenderWrites::Always;  // every far put into the arena box is granted
    options.senderWritesMinBytes = 1024;
    provider_ = std::make_unique<ShmProvider>(ProviderContext{"receiver", table_, regions_, sink_, progress_, auth_}, options, 7);
    std::string error;
    Status status = Status::Ok;
    require(provider_->listen(&error, &status));
    provider_->start();
    OpenedMailbox opened;
    require(ok(table_.open(kBytesBox, MailboxConfig{EpochType::Bytes, 0, 4}, &opened)));
    require(ok(table_.open(kOpsBox, MailboxConfig{EpochType::Ops, 3, 4}, &opened)));
    require(ok(table_.open(kGuardedBox, MailboxConfig{EpochType::Ops, 3, 4, AccessPolicy{{"someone-else"}}}, &opened)));
    for (int i = 0; i < 2; i++) post(kBytesBox, 256);
    for (int i = 0; i < 2; i++) post(kOpsBox, 64 << 10);
    post(kGuardedBox, 64 << 10);
    require(ok(table_.open(kArenaBox, MailboxConfig{EpochType::Ops, 1, 4}, &opened)));
    for (int i = 0; i < 2; i++) postArena();
    region_ = std::make_unique<Guarded>(4096);
    uint32_t id;
    regions_.add(region_->data(), region_->size(), {}, &regionKey_, &id);
    sink_.regionBytes = region_->size();
    for (size_t i = 0; i < sizeof source_; i++) source_[i] = uint8_t(i * 7);
    arenaFd_ = makeMemfd(kArenaBytes, true, &arena_);
    for (uint64_t i = 0; i < kArenaBytes; i++) arena_[i] = uint8_t(i * 13);
  }
  ~Harness() {
    for (void* block : arenaPosts_) require(Arena::shared().give(block, kArenaPostBytes));
    munmap(arena_, kArenaBytes);
    ::close(arenaFd_);
  }

  // Dials the provider and goes through the handshake as the mode says; true when the
  // provider is still connected after it (ready, or refusing us).
  bool connect(Input& in) {
    sock_ = dialAbstract(provider_->boundAddress().substr(6));
    require(sock_ >= 0);
    run();  // accept
    std::string error;
    require(segment_.create(segmentBytes(kRing), &error));
    wakeUs_ = makeEventFd();
    wakeThem_ = makeEventFd();
    base_ = segment_.base();
    outControl_ = reinterpret_cast<RingControl*>(base_ + controlOffset(kFromDialer));
    inControl_ = reinterpret_cast<RingControl*>(base_ + controlOffset(kFromAcceptor));
    out_ = base_ + ringOffset(kFromDialer, kRing);
    storeFlag(&outControl_->consumerSleeping, 1);
    Hello offer;
    offer.kind = HelloKind::Offer;
    offer.flags = mode_.weAuth ? kHelloFlagAuth : 0;
    if (mode_.weAuth) in.take(offer.nonce.data(), offer.nonce.size());
    offer.incarnation = 99;
    offer.ringBytes = kRing;
    offer.probeAddress = reinterpret_cast<uint64_t>(&probe_);
    offer.probeValue = probe_;
    offer.nodeId = "peer";
    const int fds[3] = {segment_.fd(), wakeUs_, wakeThem_};
    require(sendMessage(sock_, encodeHello(offer), fds, 3));
    run();
    Hello accept;
    if (!receiveHello(&accept)) return false;
    // A side that does not authenticate as the provider does is refused at once.
    if (mode_.weAuth != mode_.providerAuth) {
      require(accept.refused());
      expectedAuthFailures_ = 1;
      return false;
    }
    require(!accept.refused());
    const auth::Party us{auth::Role::Dialer, offer.nonce, offer.nodeId, offer.incarnation};
    const auth::Party them{auth::Role::Acceptor, accept.nonce, accept.nodeId, accept.incarnation};
    if (mode_.weAuth) require(accept.carriesProof() && auth_.verify(kAuthContext, them, us, accept.proof.data()));
    if (mode_.earlyOps) operate(in, in.byte() % 8);  // the provider must not read any of it yet
    if (sock_ < 0) return false;
    Hello confirm = offer;
    confirm.kind = HelloKind::Confirm;
    confirm.ringBytes = 0;
    confirm.flags = mode_.refuse ? kHelloFlagRefused | offer.flags
                                 : (mode_.claimPull ? kHelloFlagCanPull : 0) | offer.flags;
    if (confirm.carriesProof()) {
      if (mode_.rightProof) confirm.proof = auth_.prove(kAuthContext, us, them);
      else in.take(confirm.proof.data(), confirm.proof.size());
    }
    require(sendMessage(sock_, encodeHello(confirm)));
    run();
    if (mode_.refuse) {
      expectedAuthFailures_ = 1;
    } else if (mode_.weAuth && !mode_.rightProof) {
      // Refused after our Confirm: a refused Accept says so (the odds of a right proof from
      // 32 input bytes are nil).
      Hello refusal;
      require(receiveHello(&refusal) && refusal.refused());
      expectedAuthFailures_ = 1;
    } else {
      ready_ = true;
    }
    return true;
  }

  void operate(Input& in, size_t maxOps = SIZE_MAX) {
    for (size_t done = 0; done < maxOps && in.more() && sock_ >= 0; done++) {
      uint8_t op = in.byte();
      switch (op & 7) {
        case 0: {
          size_t n = 8 * (in.byte() % 64 + 1);
          std::vector<uint8_t> bytes(n);
          in.take(bytes.data(), n);
          append(bytes.data(), n);
          break;
        }
        case 1:
          wellFormed(in);
          break;
        case 2:
          tail_ = in.word();
          storeRelease(&outControl_->tail, tail_);
          kick(wakeThem_);
          break;
        case 3:
          if (op & 8) storeRelease(&inControl_->head, in.word());
          else storeRelease(&inControl_->head, loadAcquire(&inControl_->tail));
          kick(wakeThem_);
          break;
        case 4:
          ownPut(op & 8);
          break;
        case 5:
          run();
          break;
        case 6:
          ::close(sock_);
          sock_ = -1;
          break;
        case 7: {
          uint8_t* words = base_ + (in.byte() % 4) * 64 + (in.byte() % 2) * sizeof(RingControl);
          *words = in.byte();
          kick(wakeThem_);
          break;
        }
      }
    }
    run();
  }

  void finish() {
    if (sock_ >= 0) ::close(sock_);
    run();
    provider_->close();
    for (auto& [id, count] : sink_.answers) require(count == 1);
    require(sink_.answers.size() == ownPuts_);
    table_.closeAll();  // hangs if a reservation outlived its connection
    for (auto& b : posted_) require(b->intact());
    require(region_->intact());
    require(sink_.authFailures == expectedAuthFailures_);
    if (!ready_) {
      // Never ready: nothing it read, nothing placed.
      require(sink_.placed == 0 && untouched(*region_));
      for (auto& b : posted_) require(untouched(*b));
    }
    if (wakeUs_ >= 0) ::close(wakeUs_);
    if (wakeThem_ >= 0) ::close(wakeThem_);
  }

 private:
  // The provider's next handshake message; false if it sent none (it closed).
  bool receiveHello(Hello* out) {
    uint8_t buf[kMaxHelloBytes];
    std::vector<int> none;
    ssize_t n = receiveMessage(sock_, buf, sizeof buf, &none);
    for (int fd : none) ::close(fd);
    if (n <= 0) return false;
    require(decodeHello(buf, size_t(n), HelloKind::Accept, out).empty());  // the provider's hellos are well-formed
    return true;
  }

  void post(uint64_t vaddr, size_t size) {
    if (posted_.size() >= kMaxPosts) return;
    posted_.push_back(std::make_unique<Guarded>(size));
    uint64_t index;
    table_.post(vaddr, posted_.back()->data(), size, 0, 0, &index);
  }

  // A buffer of the provider's arena (given back once the table is closed).
  void postArena() {
    if (arenaPosts_.size() >= kMaxPosts) return;
    bool zeroed;
    void* block = Arena::shared().take(kArenaPostBytes, 4096, &zeroed);
    require(block != nullptr);
    arenaPosts_.push_back(block);
    uint64_t index;
    table_.post(kArenaBox, static_cast<uint8_t*>(block), kArenaPostBytes, 0, 0, &index);
  }

  void run() {
    for (int round = 0; round < 8; round++) {
      std::vector<pollfd> fds;
      std::vector<uint64_t> tokens;
      for (auto& [token, fd] : poller_.fds) {
        fds.push_back(pollfd{fd.first, short(POLLIN), 0});
        tokens.push_back(token);
      }
      if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
      for (size_t i = 0; i < fds.size(); i++) {
        if (!fds[i].revents) continue;
        uint32_t events = (fds[i].revents & POLLIN ? EPOLLIN : 0) | (fds[i].revents & POLLHUP ? EPOLLHUP : 0);
        progress_.dispatch(tokens[i], events);
      }
      // Re-post what retired, so that later puts find buffers.
      for (uint64_t vaddr : sink_.retired) vaddr == kArenaBox ? postArena() : post(vaddr, vaddr == kBytesBox ? 256 : 64 << 10);
      sink_.retired.clear();
    }
  }

  // Bytes at our tail as they are (they need not fit the ring's end: the provider must say no).
  void append(const uint8_t* bytes, size_t n) {
    uint64_t pos = tail_ % kRing;
    size_t first = std::min<uint64_t>(n, kRing - pos);
    std::memcpy(out_ + pos, bytes, first);
    std::memcpy(out_, bytes + first, n - first);
    tail_ += n;
    storeRelease(&outControl_->tail, tail_);
    kick(wakeThem_);
  }

  void wellFormed(Input& in) {
    uint8_t kind = in.byte();
    PutRecord put{};
    put.flags = in.byte() % 32;  // append, raw, lazy ack, late ack, arena
    put.id = kind & 0x80 ? in.word() : nextPutId_;
    const uint8_t box = in.byte();
    const uint64_t boxes[] = {kBytesBox, kOpsBox, regionKey_, kGuardedBox, 0, kArenaBox};
    put.vaddr = box % 6 == 4 ? in.word() : boxes[box % 6];
    put.offset = in.word(2);
    if (put.flags & kFlagAppend) put.offset = 0;
    std::vector<uint8_t> record;
    auto emit = [&](const void* head, size_t headBytes, size_t payload) {
      record.assign(roundUp8(headBytes + payload), 0);
      std::memcpy(record.data(), head, headBytes);
      in.take(record.data() + headBytes, payload);
    };
    switch (kind % 13) {
      case 0: {  // Put
        put.len = in.word(2) % 1100;
        put.prefix = {uint32_t(RecordType::Put), uint32_t(roundUp8(sizeof put + put.len))};
        emit(&put, sizeof put, put.len);
        nextPutId_++;
        break;
      }
      case 1: {  // FarPut from our own memory: sometimes past its end
        FarPutRecord far{put, 0};
        far.put.len = in.word(3) % (2 * sizeof source_) + 1;
        far.src = source(put.flags) + in.word(2) % (2 * sourceBytes(put.flags));
        far.put.prefix = {uint32_t(RecordType::FarPut), sizeof far};
        emit(&far, sizeof far, 0);
        lastFar_ = far.put.id;
        nextPutId_++;
        break;
      }
      case 9: {  // FarGatherPut: an inline head (sometimes too long), the rest from our own memory
        FarGatherPutRecord far{put, 0, 0};
        far.headLen = in.word(2) % (kMaxFarHeadBytes + 2);
        far.put.len = far.headLen + in.word(3) % (2 * sizeof source_);
        far.src = source(put.flags) + in.word(2) % (2 * sourceBytes(put.flags));
        far.put.prefix = {uint32_t(RecordType::FarGatherPut), uint32_t(roundUp8(sizeof far + far.headLen))};
        emit(&far, sizeof far, far.headLen);
        lastFar_ = far.put.id;
        nextPutId_++;
        break;
      }
      case 2: {  // one chunk
        ChunkPutRecord chunk{put, 0, 0};
        chunk.put.len = in.word(3) % (256 << 10) + 1;
        chunk.chunkOffset = kind & 0x40 ? in.word(3) : chunkNext_;
        chunk.chunkLen = std::min<uint64_t>(in.word(2) % 4096 + 1, chunk.put.len - std::min(chunk.put.len, chunk.chunkOffset));
        if (chunk.chunkLen == 0) chunk.chunkLen = 1;
        chunk.put.prefix = {uint32_t(RecordType::ChunkPut), uint32_t(roundUp8(sizeof chunk + chunk.chunkLen))};
        emit(&chunk, sizeof chunk, chunk.chunkLen);
        chunkNext_ = chunk.chunkOffset + chunk.chunkLen;
        if (chunkNext_ >= chunk.put.len) {
          chunkNext_ = 0;
          nextPutId_++;
        }
        break;
      }
      case 3: {  // Ack of the provider's next put, or of any id
        AckRecord ack{{uint32_t(RecordType::Ack), sizeof(AckRecord)}, uint32_t(in.byte() % 14), 0,
                      kind & 0x40 ? in.word() : ++acked_};
        emit(&ack, sizeof ack, 0);
        break;
      }
      case 5: {  // a raw-write notice, as if we had written the region ourselves
        put.flags = kFlagRaw;
        put.len = in.word(2);
        put.prefix = {uint32_t(RecordType::RawNotice), sizeof put};
        emit(&put, sizeof put, 0);
        nextPutId_++;
        break;
      }
      case 6:    // may we write the region (or another key)?
      case 7:    // a revoke of a region of ours (we lent none)
      case 8: {  // confirming a revoke it never sent
        const RecordType types[] = {RecordType::RegionQuery, RecordType::Revoke, RecordType::RevokeAck};
        KeyRecord key{{uint32_t(types[kind % 13 - 6]), sizeof(KeyRecord)}, 0, 0, box % 2 ? regionKey_ : put.vaddr};
        emit(&key, sizeof key, 0);
        break;
      }
      case 11: {  // we wrote our last far put (granted or not), or any id
        KeyRecord written{{uint32_t(RecordType::Written), sizeof(KeyRecord)}, 0, 0, kind & 0x40 ? in.word() : lastFar_};
        emit(&written, sizeof written, 0);
        break;
      }
      case 12: {  // write the provider's latest put into our arena, or any put, range and length
        GrantRecord grant{{uint32_t(RecordType::Grant), sizeof(GrantRecord)}, 0, 0, kind & 0x40 ? in.word() : ownPuts_,
                          reinterpret_cast<uint64_t>(arena_) + in.word(2) % (2 * kArenaBytes),
                          kind & 0x20 ? in.word(2) + 1 : sizeof bigOwn_};
        emit(&grant, sizeof grant, 0);
        break;
      }
      case 10:  // not a record: an arena share on the socket
        shareArena(in);
        return;
      case 4: {  // Pad to the ring's end
        RecordPrefix pad{uint32_t(RecordType::Pad), uint32_t(kRing - tail_ % kRing)};
        emit(&pad, sizeof pad, 0);
        record.resize(8);
        append(record.data(), 8);
        tail_ += pad.bytes - 8;
        storeRelease(&outControl_->tail, tail_);
        return;
      }
    }
    // A record that would cross the ring's end goes behind a pad, as a producer writes it.
    if (tail_ % kRing + record.size() > kRing) {
      RecordPrefix pad{uint32_t(RecordType::Pad), uint32_t(kRing - tail_ % kRing)};
      std::memcpy(out_ + tail_ % kRing, &pad, sizeof pad);
      tail_ += pad.bytes;
    }
    append(record.data(), record.size());
  }

  uint64_t source(uint32_t flags) const {
    return reinterpret_cast<uint64_t>(flags & kFlagArena ? arena_ : source_);
  }
  uint64_t sourceBytes(uint32_t flags) const { return flags & kFlagArena ? kArenaBytes : sizeof source_; }

  // Ours (once accepted, twice refused), a hostile one (always refused: the provider closes),
  // or a hole punched in ours, which the provider then reads as zeros.
  void shareArena(Input& in) {
    const uint8_t variant = in.byte() % 8;
    if (variant == 7) {
      require(fallocate(arenaFd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(in.word(2) * 4096 % kArenaBytes), 4096) == 0);
      return;
    }
    ArenaShare share{reinterpret_cast<uint64_t>(arena_), kArenaBytes};
    if (variant == 2) share.bytes *= 2;
    std::vector<uint8_t> bytes = encodeArenaShare(share);
    if (variant == 5) in.take(bytes.data(), bytes.size());
    int other = variant == 1 ? makeMemfd(kArenaBytes, false, nullptr) : variant == 6 ? eventfd(0, EFD_CLOEXEC) : -1;
    const int fds[2] = {variant == 1 || variant == 6 ? other : arenaFd_, arenaFd_};
    const size_t nfds = variant == 3 ? 2 : variant == 4 ? 0 : 1;
    const bool hostile = (variant >= 1 && variant <= 4) || variant == 6 || (variant == 0 && arenaShared_);
    if (variant == 0) arenaShared_ = true;
    const bool sent = sendMessage(sock_, bytes, fds, nfds);
    if (other >= 0) ::close(other);
    run();
    // Closed by the provider, or by a refusal of another kind (garbage, a share out of turn)?
    // (Read past the provider's own arena share, sent before a Grant.)
    bool closed = !sent;
    pollfd p{sock_, POLLIN, 0};
    while (!closed && ::poll(&p, 1, 0) == 1) {
      std::vector<int> got;
      uint8_t buf[64];
      const ssize_t n = receiveMessage(sock_, buf, sizeof buf, &got);
      for (int fd : got) ::close(fd);
      if (n < 0) break;
      closed = n == 0;
    }
    require(closed || !hostile);
    if (closed) {
      ::close(sock_);
      sock_ = -1;
    }
  }

  void ownPut(bool big) {
    if (ownPuts_ >= kMaxOwnPuts) return;
    PutRequest req{};
    req.id = ++ownPuts_;
    req.peer = peerName("peer");
    req.vaddr = kTheirBox;
    req.data = big ? bigOwn_ : ownData_;
    req.len = big ? sizeof bigOwn_ : sizeof ownData_;
    provider_->put(req);
  }

  Mode mode_;
  auth::PeerAuth auth_;  // the provider's, and the one the harness proves with
  Sink sink_;
  MailboxTable table_;
  RegionTable regions_;
  Progress progress_;
  Poller poller_;
  std::unique_ptr<ShmProvider> provider_;
  std::vector<std::unique_ptr<Guarded>> posted_;
  std::unique_ptr<Guarded> region_;
  uint64_t regionKey_ = 0;
  Segment segment_;
  uint8_t* base_ = nullptr;
  uint8_t* out_ = nullptr;
  RingControl* outControl_ = nullptr;
  RingControl* inControl_ = nullptr;
  int sock_ = -1, wakeUs_ = -1, wakeThem_ = -1;
  uint64_t tail_ = 0, nextPutId_ = 1, chunkNext_ = 0, acked_ = 0, lastFar_ = 0;
  uint64_t ownPuts_ = 0;
  int expectedAuthFailures_ = 0;
  bool ready_ = false;  // the handshake completed (the provider read our Confirm and took it)
  uint64_t probe_ = 0x5eed5eed5eed5eedull;
  uint8_t source_[8192];
  static constexpr uint64_t kArenaBytes = 64 << 10;
  int arenaFd_ = -1;
  uint8_t* arena_ = nullptr;
  bool arenaShared_ = false;
  uint8_t ownData_[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  uint8_t bigOwn_[4096] = {};  // larger than eagerMaxBytes: a far put (granted, if we say so)
  static constexpr uint64_t kArenaPostBytes = 64 << 10;
  std::vector<void*> arenaPosts_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 0x80) {
    fuzzHello(data + 1, size - 1);
    return 0;
  }
  Harness h{Mode(data[0])};
  Input in(data + 1, size - 1);
  if (h.connect(in)) h.operate(in);
  h.finish();
  return 0;
}
