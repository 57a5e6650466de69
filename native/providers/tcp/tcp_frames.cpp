#include "tcp_frames.h"

#include <endian.h>

#include <cstring>

namespace rvma::tcpwire {
namespace {

uint64_t get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return le64toh(v);
}

// Type, flags, status and parts (the first 8 bytes) as given; vaddr, offset and len zero.
bool shaped(const uint8_t* in, uint8_t type, uint16_t status) {
  uint8_t want[8] = {type, 0, uint8_t(status), uint8_t(status >> 8), 0, 0, 0, 0};
  return std::memcmp(in, want, sizeof want) == 0 && get64(in + 16) == 0 && get64(in + 24) == 0 && get64(in + 32) == 0;
}

}  // namespace

void encodeControl(wire::FrameType type, uint64_t id, uint8_t out[wire::kHeaderBytes]) {
  wire::FrameHeader h{type};
  h.id = id;
  wire::encodeHeader(h, out);
}

wire::DecodeResult decodeHeader(const uint8_t in[wire::kHeaderBytes], wire::FrameHeader* f) {
  for (wire::FrameType type : {kFloor, kWindow}) {
    if (in[0] != uint8_t(type)) continue;
    uint64_t id = get64(in + 8);
    if (!shaped(in, uint8_t(type), 0) || (type == kWindow && id == 0)) return wire::DecodeResult::Malformed;
    *f = wire::FrameHeader{type};
    f->id = id;
    return wire::DecodeResult::Ok;
  }
  if (in[0] == uint8_t(wire::FrameType::Nack) && shaped(in, in[0], uint16_t(Status::Ambiguous))) {
    *f = wire::FrameHeader{wire::FrameType::Nack};
    f->status = uint16_t(Status::Ambiguous);
    f->id = get64(in + 8);
    return wire::DecodeResult::Ok;
  }
  return wire::decodeHeader(in, f);
}

}  // namespace rvma::tcpwire
