// libFuzzer harness: the tcp provider's receive path (TcpConnection's state machine, the
// SplitReceiver, the mailbox and region tables) fed byte streams on up to four connections
// of one or two peer nodes, after a valid handshake, with mailboxes and a region open and
// puts of our own waiting for answers. Connections are socketpairs adopted by the provider,
// driven by hand on this thread (loop progress).
//
// Input: byte 0 picks the connections (bits 0-1: count - 1; bit 2: the last one is another
// node) and authentication (bit 3: the receiver has a secret and every connection proves it;
// bit 4: ...with a wrong proof; bit 5: the hello's auth flag is the opposite of the
// receiver's). Then operations, each one byte: bits 0-1 the connection, bits 2-7 the kind:
//   0-31  write 1 + next byte bytes of the input to it   32-47 write next 2 bytes (LE) bytes
//   48-55 let the provider run (read what was written)   56-59 close it
//   60-63 put 16 more bytes of ours to the peer (its answers become valid input; 64 at most)
// The 8 bytes "REGION#1" anywhere in written input are replaced by the region's key, which is
// random, so raw writes can reach the region.
//
// Checks: no byte lands outside a posted buffer or the region (canaries; ASan sees the rest),
// every put of ours is reported exactly once, no reservation outlives its connection
// (the final closeAll would wait forever: libFuzzer reports the hang), and a connection that
// failed authentication places nothing and is reported as authFailed.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "harness_support.h"
#include "native/providers/tcp/tcp_provider.h"
#include "native/providers/tcp/tcp_frames.h"

using namespace rvma;
using rvma::fuzz::Guarded;
using rvma::fuzz::Poller;
using rvma::fuzz::require;

namespace {

constexpr uint64_t kBytesBox = 0x10000;  // bytes epochs of 256-byte buffers
constexpr uint64_t kOpsBox = 0x10001;    // ops epochs of 3 puts, 64 KiB buffers; only node fuzz-a may put
constexpr uint64_t kSmallBox = 0x10002;  // one 16-byte buffer, epoch never ends
constexpr uint64_t kTheirBox = 0x20000;  // where our own puts go
constexpr size_t kMaxPosts = 64;
constexpr uint64_t kMaxOwnPuts = 64;  // each input puts at most this many of its own
constexpr uint8_t kRegionMark[8] = {'R', 'E', 'G', 'I', 'O', 'N', '#', '1'};




class Sink : public EventSink {
 public:
  std::vector<CompletionRecord> retired;
  std::map<uint64_t, int> answers;  // put id -> times reported
  uint64_t regionBytes = 0;
  void completions(const std::vector<CompletionRecord>& records) override {
    retired.insert(retired.end(), records.begin(), records.end());
    epochs += records.size();
  }
  size_t epochs = 0;
  void mailboxReleased(uint32_t) override {}
  void putSettled(uint64_t putId, Status, const std::string&) override { answers[putId]++; }
  void connected(uint64_t, Status, const std::string&) override {}
  void peerLost(const std::string&, uint64_t, const std::string&) override {}
  void rawWritten(uint32_t, uint64_t offset, uint64_t len) override {
    require(offset + len <= regionBytes);
    rawWrites++;
  }
  size_t rawWrites = 0;
  void regionReleased(uint32_t) override {}
  void protocolError(const std::string&, const std::string&) override {}
  void authFailed(const std::string&, const std::string&) override { authFailures++; }
  int authFailures = 0;
};

constexpr char kSecret[] = "fuzzing secret, 32 bytes long!!";
constexpr auth::Context kTcpAuth{"tcp", wire::kVersion};

// How the harness's peers authenticate (input byte 0, bits 3-5).
struct AuthMode {
  bool on = false;         // the receiver has a secret
  bool wrongProof = false;
  bool flagFlipped = false;  // the hello says the opposite of the receiver
  bool fails() const { return flagFlipped || (on && wrongProof); }
};

class Harness {
 public:
  explicit Harness(AuthMode mode)
      : mode_(mode), auth_(mode.on ? auth::PeerAuth(kSecret) : auth::PeerAuth()), table_(sink_), regions_(sink_),
        progress_(ProgressMode::Loop) {
    progress_.usePoller(&poller_);
    provider_ = std::make_unique<TcpProvider>(ProviderContext{"receiver", table_, regions_, sink_, progress_, auth_},
                                              TcpOptions{}, 7);
    provider_->start();
    OpenedMailbox opened;
    require(ok(table_.open(kBytesBox, MailboxConfig{EpochType::Bytes, 0, 4}, &opened)));
    require(ok(table_.open(kOpsBox, MailboxConfig{EpochType::Ops, 3, 4, AccessPolicy{{"fuzz-a"}}}, &opened)));
    require(ok(table_.open(kSmallBox, MailboxConfig{EpochType::Ops, 1000, 1}, &opened)));
    for (int i = 0; i < 2; i++) post(kBytesBox, 256);
    for (int i = 0; i < 2; i++) post(kOpsBox, 64 << 10);
    post(kSmallBox, 16);
    region_ = std::make_unique<Guarded>(4096);
    uint32_t id;
    regions_.add(region_->data(), region_->size(), {}, &regionKey_, &id);
    sink_.regionBytes = region_->size();
  }

  void connect(int count, bool twoNodes) {
    for (int i = 0; i < count; i++) {
      int sv[2];
      require(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
      provider_->adopt(sv[0], "fuzz#" + std::to_string(i));
      peers_.push_back(sv[1]);
      wire::Hello hello;
      hello.incarnation = 1;
      hello.nodeId = twoNodes && i == count - 1 ? "fuzz-b" : "fuzz-a";
      hello.flags = mode_.on != mode_.flagFlipped ? wire::kHelloAuth : 0;
      hello.nonce.fill(uint8_t(0x40 + i));
      std::string bytes = wire::encodeHello(hello);
      if (hello.flags) bytes += proof(sv[1], hello);
      write(i, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    run();  // handshakes done: the puts of ours can go
    require(sink_.authFailures == (mode_.fails() ? count : 0));
  }

  // Our proof as the dialer, over the nonce in the receiver's hello (which it sent on adopt).
  std::string proof(int fd, const wire::Hello& ours) {
    uint8_t theirs[wire::kHelloBytes + wire::kNonceBytes + 512];
    size_t got = 0, need = wire::kHelloBytes, idLen = 0, addressLen = 0;
    wire::Hello peer;
    while (got < need) {
      pollfd p{fd, POLLIN, 0};
      require(::poll(&p, 1, 1000) == 1);
      ssize_t n = ::recv(fd, theirs + got, need - got, 0);
      require(n > 0);
      got += size_t(n);
      if (got == wire::kHelloBytes) {
        require(wire::decodeHelloFixed(theirs, &peer, &idLen, &addressLen) == wire::DecodeResult::Ok);
        need += wire::kNonceBytes + idLen + addressLen;
      }
    }
    std::memcpy(peer.nonce.data(), theirs + wire::kHelloBytes, wire::kNonceBytes);
    peer.nodeId.assign(reinterpret_cast<const char*>(theirs + wire::kHelloBytes + wire::kNonceBytes), idLen);
    auth::Proof p = auth::PeerAuth(kSecret).prove(kTcpAuth, auth::Party{auth::Role::Dialer, ours.nonce, ours.nodeId, 1},
                                                  auth::Party{auth::Role::Acceptor, peer.nonce, peer.nodeId, 7});
    if (mode_.wrongProof) p[0] ^= 1;
    return std::string(reinterpret_cast<const char*>(p.data()), p.size());
  }

  void putOurs() {
    if (lastPut_ >= kMaxOwnPuts) return;
    PutRequest req{};
    req.id = ++lastPut_;
    req.peer = peerName("fuzz-a");
    req.vaddr = kTheirBox;
    req.data = ours_;
    req.len = sizeof ours_;
    provider_->put(req);
    progress_.endRound();  // as the engine's flush does: the put goes out now
  }

  // Writes bytes to connection i; the provider reads them at the next run (an operation of
  // the input, or a full socket). Gives up once the provider closed its end.
  void write(int i, const uint8_t* bytes, size_t len) {
    std::vector<uint8_t> out(bytes, bytes + len);
    for (size_t at = 0; at + sizeof kRegionMark <= out.size(); at++) {
      if (std::memcmp(out.data() + at, kRegionMark, sizeof kRegionMark) == 0) {
        std::memcpy(out.data() + at, &regionKey_, sizeof regionKey_);
      }
    }
    for (size_t at = 0; at < out.size() && peers_[i] >= 0;) {
      ssize_t n = ::send(peers_[i], out.data() + at, out.size() - at, MSG_NOSIGNAL);
      if (n > 0) {
        at += size_t(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return;  // the provider closed the connection
      } else if (!run()) {
        return;  // nothing moves: the provider stopped reading (a dead connection)
      }
    }
  }

  void close(int i) {
    if (peers_[i] < 0) return;
    closePeer(peers_[i]);
    run();
  }

  // Everything the provider can do now, until it is idle. True if anything happened. One
  // poll over the provider's fds and our ends per round: inputs run thousands of rounds.
  bool run() {
    bool any = false;
    for (int round = 0; round < 256; round++) {
      std::vector<uint64_t> tokens;
      std::vector<pollfd> fds;
      for (auto& [token, fd] : poller_.fds) {
        short want = short(((fd.second & EPOLLIN) ? POLLIN : 0) | ((fd.second & EPOLLOUT) ? POLLOUT : 0));
        tokens.push_back(token);
        fds.push_back(pollfd{fd.first, want, 0});
      }
      for (int fd : peers_) {
        if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 0) <= 0) break;
      for (size_t i = 0; i < fds.size(); i++) {
        const short r = fds[i].revents;
        if (!r) continue;
        if (i >= tokens.size()) {
          if (!drain(fds[i].fd)) closePeer(fds[i].fd);
          continue;
        }
        uint32_t events = ((r & POLLIN) ? EPOLLIN : 0) | ((r & POLLOUT) ? EPOLLOUT : 0) |
                          ((r & POLLHUP) ? EPOLLHUP : 0) | ((r & POLLERR) ? EPOLLERR : 0);
        progress_.dispatch(tokens[i], events);  // a token removed meanwhile is skipped
      }
      repost();
      any = true;
    }
    return any;
  }

  void finish() {
    for (size_t i = 0; i < peers_.size(); i++) close(int(i));
    provider_->close();
    for (uint64_t id = 1; id <= lastPut_; id++) require(sink_.answers[id] == 1);
    require(sink_.answers.size() == lastPut_);
    if (mode_.fails()) require(sink_.epochs == 0 && sink_.rawWrites == 0);  // nothing of an unproven peer counts
    table_.closeAll();  // waits for every reservation: one leaked is a hang
    for (auto& g : posted_) require(g->intact());
    require(region_->intact());
  }

  int connections() const { return int(peers_.size()); }

 private:
  void post(uint64_t vaddr, size_t size) {
    if (posted_.size() >= kMaxPosts) return;
    posted_.push_back(std::make_unique<Guarded>(size));
    uint64_t index;
    table_.post(vaddr, posted_.back()->data(), size, 0, 0, &index);
  }

  // Retired buffers go back to JS in the library; here a fresh one takes each one's place.
  void repost() {
    auto records = std::move(sink_.retired);
    sink_.retired.clear();
    for (const CompletionRecord& r : records) {
      require(r.bytes <= (r.vaddr == kOpsBox ? size_t(64 << 10) : r.vaddr == kBytesBox ? 256u : 16u));
      post(r.vaddr, r.vaddr == kOpsBox ? 64 << 10 : 256);
    }
  }

  // What the provider sends us (its hello, answers, our puts) is read and dropped. False
  // once the provider closed its end.
  static bool drain(int fd) {
    static uint8_t scratch[64 << 10];
    for (;;) {
      ssize_t n = ::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
      if (n > 0) continue;
      return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
  }

  void closePeer(int fd) {
    for (int& peer : peers_) {
      if (peer == fd) {
        ::close(peer);
        peer = -1;
      }
    }
  }

  AuthMode mode_;
  auth::PeerAuth auth_;
  Sink sink_;
  MailboxTable table_;
  RegionTable regions_;
  Poller poller_;
  Progress progress_;
  std::unique_ptr<TcpProvider> provider_;
  std::deque<std::unique_ptr<Guarded>> posted_;
  std::unique_ptr<Guarded> region_;
  uint64_t regionKey_ = 0;
  std::vector<int> peers_;
  uint64_t lastPut_ = 0;
  uint8_t ours_[16] = {};
};

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ >= end_; }
  uint8_t byte() { return empty() ? 0 : *p_++; }
  const uint8_t* take(size_t* n) {
    *n = std::min<size_t>(*n, size_t(end_ - p_));
    const uint8_t* at = p_;
    p_ += *n;
    return at;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t setup = in.byte();
  AuthMode mode{(setup & 8) != 0, (setup & 16) != 0, (setup & 32) != 0};
  Harness h(mode);
  h.connect(1 + (setup & 3), (setup & 4) != 0);
  h.putOurs();
  h.run();
  for (int ops = 0; !in.empty() && ops < 1024; ops++) {
    const uint8_t op = in.byte();
    const int conn = (op & 3) % h.connections();
    const uint8_t kind = op >> 2;
    if (kind < 48) {
      size_t n = kind < 32 ? 1 + size_t(in.byte()) : size_t(in.byte()) | size_t(in.byte()) << 8;
      const uint8_t* bytes = in.take(&n);
      h.write(conn, bytes, n);
    } else if (kind < 56) {
      h.run();
    } else if (kind < 60) {
      h.close(conn);
    } else {
      h.putOurs();
    }
  }
  h.finish();
  return 0;
}
