// Mutual authentication of two peers that share a secret, the same on every provider: each
// side sends a fresh random nonce, then proves it knows the secret with an HMAC-SHA256 over
// both nonces, both node ids and incarnations, the transport, its protocol version and the
// prover's role. Fresh nonces defeat replay; the role (dialer or acceptor) defeats reflection,
// since a peer only ever makes proofs of its own role. OpenSSL does the crypto.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rvma::auth {

constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;
// A shorter secret is refused when the endpoint is created (HMAC-SHA256 wants 32 bytes).
constexpr size_t kMinSecretBytes = 16;
constexpr size_t kMaxSecretBytes = 1024;

using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

enum class Role : uint8_t { Dialer = 1, Acceptor = 2 };

// One side of a handshake, as the transcript names it.
struct Party {
  Role role;
  const Nonce& nonce;
  const std::string& nodeId;
  uint64_t incarnation;
};

// What the handshake is about: which transport and which version of its protocol.
struct Context {
  const char* transport;
  uint16_t version;
};

class PeerAuth {
 public:
  PeerAuth() = default;  // no secret: authentication off
  explicit PeerAuth(std::string secret) : secret_(std::move(secret)) {}

  bool enabled() const { return !secret_.empty(); }
  // A nonce from OpenSSL's RAND_bytes (the kernel's generator should that fail).
  static void freshNonce(Nonce* out);
  // The proof `prover` sends to `verifier`.
  Proof prove(const Context& c, const Party& prover, const Party& verifier) const;
  // Whether `got` is the proof `prover` owes `verifier`, compared in constant time.
  bool verify(const Context& c, const Party& prover, const Party& verifier, const uint8_t* got) const;

 private:
  bool mac(const Context& c, const Party& prover, const Party& verifier, Proof* out) const;
  std::string secret_;
};

// Why a side refuses a peer whose hello says it does (or does not) authenticate.
std::string mismatch(bool weAuthenticate);
// The sentence for a proof that does not verify.
constexpr const char* kBadProof = "authentication failed: the peer's proof does not match this endpoint's secret";

}  // namespace rvma::auth
