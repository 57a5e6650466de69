// Puts handed over from JS: a payload copied only when a provider keeps it past put(), and
// the answer for a put that left work for the end of the turn.
#pragma once
#include "../providers/provider.h"

namespace rvma::addon {

// A put's answer when it was accepted and left work for the end of the turn (JS then flushes
// once the turn ends); 0 when it left none.
constexpr double kPutRoundDue = -1;

// copy: true. The caller's memory is free once put() returns: the payload is copied only if a
// provider keeps the bytes past put() (shm writes a put that fits its ring into the ring during
// the call, which is then the only copy).
void copyIfKept(PutRequest& req);

}  // namespace rvma::addon
