#include "peer_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <random>

namespace rvma::auth {
namespace {
// Every field is fixed-size or length-prefixed, so no two transcripts share one encoding.
void appendU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; i++) out.push_back(char((v >> (8 * i)) & 0xff));
}

void appendBytes(std::string& out, const void* p, size_t n) {
  appendU64(out, n);
  out.append(static_cast<const char*>(p), n);
}

void appendParty(std::string& out, const Party& p) {
  out.push_back(char(p.role));
  out.append(reinterpret_cast<const char*>(p.nonce.data()), p.nonce.size());
  appendBytes(out, p.nodeId.data(), p.nodeId.size());
  appendU64(out, p.incarnation);
}
}  // namespace

void PeerAuth::freshNonce(Nonce* out) {
  if (RAND_bytes(out->data(), int(out->size())) == 1) return;
  std::random_device os;  // OpenSSL's generator failed: the kernel's, directly
  for (size_t i = 0; i < out->size(); i += 4) {
    uint32_t v = os();
    std::memcpy(out->data() + i, &v, 4);
  }
}

Proof PeerAuth::prove(const Context& c, const Party& prover, const Party& verifier) const {
  Proof proof{};
  if (!mac(c, prover, verifier, &proof)) freshNonce(&proof);  // no HMAC: a proof nobody verifies (verify fails too)
  return proof;
}

bool PeerAuth::mac(const Context& c, const Party& prover, const Party& verifier, Proof* out) const {
  std::string transcript = "rvma peer auth 1";
  appendBytes(transcript, c.transport, std::char_traits<char>::length(c.transport));
  appendU64(transcript, c.version);
  appendParty(transcript, prover);
  appendParty(transcript, verifier);
  unsigned int len = 0;
  return HMAC(EVP_sha256(), secret_.data(), int(secret_.size()), reinterpret_cast<const unsigned char*>(transcript.data()),
              transcript.size(), out->data(), &len) != nullptr &&
         len == out->size();
}

bool PeerAuth::verify(const Context& c, const Party& prover, const Party& verifier, const uint8_t* got) const {
  Proof want;
  if (!enabled() || !mac(c, prover, verifier, &want)) return false;
  return CRYPTO_memcmp(want.data(), got, want.size()) == 0;
}

std::string mismatch(bool weAuthenticate) {
  return weAuthenticate ? "authentication failed: the peer does not authenticate, and this endpoint requires it (auth)"
                        : "authentication failed: the peer requires authentication, and this endpoint has no auth secret";
}

}  // namespace rvma::auth
