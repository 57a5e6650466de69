// What version 2 of the tcp protocol adds to the frames of native/wire/frames.h, for puts
// that survive a broken connection (docs/protocol.md describes them):
// - Window: a receiver names, on each connection, its window of the sender's puts (the
//   outcomes it remembers, shared by all of the sender's connections). A put is only ever
//   sent again into the window it was first sent into: any other could not tell a re-send of
//   a put it already placed from a new one.
// - Floor: a sender tells a receiver below which id its puts are all settled, so the
//   receiver can forget their outcomes.
// - Nack status 12 (Ambiguous): a re-sent put the receiver can no longer tell apart.
#pragma once
#include <cstdint>

#include "../../core/status.h"
#include "../../wire/frames.h"

namespace rvma::tcpwire {

// id = the floor: every put id below it that the sender sent to this receiver is settled
// (the sender has its outcome, or gave up on it, and never sends it again).
constexpr wire::FrameType kFloor = wire::FrameType(8);
// id = the window's name, nonzero, unique among the receiver's windows while it lives.
constexpr wire::FrameType kWindow = wire::FrameType(9);

// A header of type kFloor or kWindow carrying `id`, every other field zero.
void encodeControl(wire::FrameType type, uint64_t id, uint8_t out[wire::kHeaderBytes]);

// wire::decodeHeader, and also Floor and Window frames (unused fields zero, a window's name
// nonzero) and Nacks with status 12 (Ambiguous).
wire::DecodeResult decodeHeader(const uint8_t in[wire::kHeaderBytes], wire::FrameHeader* f);

}  // namespace rvma::tcpwire
