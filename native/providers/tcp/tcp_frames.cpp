#include "tcp_frames.h"

#include <endian.h>

#include <cstring>

namespace rvma::wire {
namespace {

void put16(uint8_t* p, uint16_t v) { v = htole16(v); std::memcpy(p, &v, 2); }
void put32(uint8_t* p, uint32_t v) { v = htole32(v); std::memcpy(p, &v, 4); }
void put64(uint8_t* p, uint64_t v) { v = htole64(v); std::memcpy(p, &v, 8); }
uint16_t get16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return le16toh(v); }
uint32_t get32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return le32toh(v); }
uint64_t get64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return le64toh(v); }

// The statuses a receiver refuses a put with (core/status.h); nothing else may come back.
// 12 (Ambiguous): a put sent again that the receiver can no longer tell from its first delivery.
bool isRefusal(uint16_t status) {
  return status == 1 || status == 2 || status == 3 || status == 4 || status == 5 || status == 10 || status == 12 || status == 13;
}

}  // namespace

std::string encodeHello(const Hello& h) {
  uint8_t fixed[kHelloBytes] = {};
  put32(fixed + 0, h.magic);
  put16(fixed + 4, h.version);
  put16(fixed + 6, uint16_t(h.nodeId.size()));
  put64(fixed + 8, h.incarnation);
  put16(fixed + 16, uint16_t(h.listenAddress.size()));
  put16(fixed + 18, h.flags);
  std::string out(reinterpret_cast<const char*>(fixed), kHelloBytes);
  out.append(reinterpret_cast<const char*>(h.nonce.data()), h.nonce.size());
  return out + h.nodeId + h.listenAddress;
}

DecodeResult decodeHelloFixed(const uint8_t in[kHelloBytes], Hello* h, size_t* nodeIdLen, size_t* addressLen) {
  h->magic = get32(in + 0);
  if (h->magic != kMagic) return DecodeResult::BadMagic;
  h->version = get16(in + 4);
  if (h->version != kVersion) return DecodeResult::BadVersion;
  *nodeIdLen = get16(in + 6);
  h->incarnation = get64(in + 8);
  *addressLen = get16(in + 16);
  h->flags = get16(in + 18);
  if (*nodeIdLen == 0 || *nodeIdLen > kMaxNodeIdBytes || *addressLen > kMaxAddressBytes) return DecodeResult::Malformed;
  if ((h->flags & ~kHelloAuth) != 0) return DecodeResult::Malformed;
  for (size_t i = 20; i < kHelloBytes; i++) {
    if (in[i] != 0) return DecodeResult::Malformed;
  }
  return DecodeResult::Ok;
}

void encodeHeader(const FrameHeader& f, uint8_t out[kHeaderBytes]) {
  out[0] = uint8_t(f.type);
  out[1] = f.flags;
  put16(out + 2, f.status);
  put32(out + 4, f.parts);
  put64(out + 8, f.id);
  put64(out + 16, f.vaddr);
  put64(out + 24, f.offset);
  put64(out + 32, f.len);
}

DecodeResult decodeHeader(const uint8_t in[kHeaderBytes], FrameHeader* f) {
  f->type = FrameType(in[0]);
  f->flags = in[1];
  f->status = get16(in + 2);
  f->parts = get32(in + 4);
  f->id = get64(in + 8);
  f->vaddr = get64(in + 16);
  f->offset = get64(in + 24);
  f->len = get64(in + 32);
  if (f->len > kMaxFrameBytes) return DecodeResult::Malformed;
  bool plain = f->flags == 0 && f->parts == 0;
  switch (f->type) {
    case FrameType::Put:
      if ((f->flags & ~(kAppend | kLazyAck | kLateAck)) || !validAckFlags(f->flags) || f->status != 0) return DecodeResult::Malformed;
      if (f->parts != 0 && (f->parts < 2 || f->parts > kMaxParts)) return DecodeResult::Malformed;
      if ((f->flags & kAppend) && (f->offset != 0 || f->parts != 0)) return DecodeResult::Malformed;
      return DecodeResult::Ok;
    case FrameType::RawWrite:
      return (f->flags & ~(kLazyAck | kLateAck)) == 0 && validAckFlags(f->flags) && f->parts == 0 && f->status == 0 ? DecodeResult::Ok : DecodeResult::Malformed;
    case FrameType::Ack:
    case FrameType::Nack: {
      bool statusOk = f->type == FrameType::Ack ? f->status == 0 : isRefusal(f->status);
      return plain && statusOk && f->vaddr == 0 && f->offset == 0 && f->len == 0 ? DecodeResult::Ok
                                                                                  : DecodeResult::Malformed;
    }
    case FrameType::Acks:
      return plain && f->status == 0 && f->vaddr == 0 && f->len == 0 && f->offset >= 2 && f->offset <= kMaxAcksRun
                 ? DecodeResult::Ok
                 : DecodeResult::Malformed;
    case FrameType::Floor:
    case FrameType::Window: {
      bool named = f->type == FrameType::Floor || f->id != 0;
      return plain && named && f->status == 0 && f->vaddr == 0 && f->offset == 0 && f->len == 0
                 ? DecodeResult::Ok
                 : DecodeResult::Malformed;
    }
    case FrameType::Ping:
    case FrameType::Pong:
    case FrameType::Error: {
      bool lenOk = f->type == FrameType::Error ? f->len <= kMaxErrorTextBytes : f->len == 0;
      return plain && f->status == 0 && f->id == 0 && f->vaddr == 0 && f->offset == 0 && lenOk
                 ? DecodeResult::Ok
                 : DecodeResult::Malformed;
    }
  }
  return DecodeResult::Malformed;
}

void encodePartExt(const PartExt& e, uint8_t out[kPartExtBytes]) {
  put64(out, e.putOffset);
  put64(out + 8, e.putLen);
}

DecodeResult decodePartExt(const uint8_t in[kPartExtBytes], const FrameHeader& f, PartExt* e) {
  e->putOffset = get64(in);
  e->putLen = get64(in + 8);
  bool inside = e->putLen <= kMaxFrameBytes && f.offset >= e->putOffset && f.len <= e->putLen &&
                f.offset - e->putOffset <= e->putLen - f.len;
  return inside ? DecodeResult::Ok : DecodeResult::Malformed;
}

const char* describe(DecodeResult r) {
  switch (r) {
    case DecodeResult::Ok: return "ok";
    case DecodeResult::BadMagic: return "wrong magic (not an rvma peer)";
    case DecodeResult::BadVersion: return "unsupported protocol version";
    case DecodeResult::Malformed: return "malformed frame";
  }
  return "?";
}

}  // namespace rvma::wire
