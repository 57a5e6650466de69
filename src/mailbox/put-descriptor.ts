// One put as it goes to the native side, alone (NativeEndpoint.put) or in the turn's queue
// (PutQueue): its placement and handling in one flags word either way (native/addon/put_flags.h).
import { AckPace } from './call-options';

const PUT_APPEND = 1;
const PUT_RAW = 2;
const PUT_LAZY_ACK = 4;
const PUT_LATE_ACK = 8;
/** The native side copies the payload now (if it keeps it): the caller's memory is free at once. */
export const PUT_COPY = 16;

export interface PutDescriptor {
  id: number;
  data: Uint8Array;
  /** A gathered put's first bytes, sent before data's. */
  head: Uint8Array | undefined;
  offset: bigint;
  /** putFlags(). */
  flags: number;
}

/** append: at the buffer's append position; raw: a one-sided write (vaddr is the region key). */
export function putFlags(append: boolean, raw: boolean, ack: AckPace, copy: boolean): number {
  const pace = ack === AckPace.Lazy ? PUT_LAZY_ACK : ack === AckPace.Late ? PUT_LATE_ACK : 0;
  return (append ? PUT_APPEND : 0) | (raw ? PUT_RAW : 0) | pace | (copy ? PUT_COPY : 0);
}
