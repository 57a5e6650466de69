// The memory a ring direction receives into, shared with its native half (native/ring/
// ring_inbound.h, SlabLayout): words first, where arrived frames are published, then one
// buffer per slot.
import { FRAME_HEADER_BYTES } from './frame';

/** In 32-bit words from the slab's start. */
export const NOTIFY_WORD = 0;
export const GRANTED_WORD = 1;
export const RECEIVED_WORD = 3;
export const ENTRIES_WORD = 4;
export const ENTRY_WORDS = 4;
const ALIGN = 64;

export interface SlabLayout {
  slots: number;
  /** The largest frame: the sender's header and data. */
  frameBytes: number;
  /** Bytes from one buffer to the next (a cache line apart). */
  stride: number;
  /** Bytes of words before the first buffer. */
  wordsBytes: number;
}

const align = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

export function slabLayout(slots: number, frameBytes: number): SlabLayout {
  return { slots, frameBytes, stride: align(FRAME_HEADER_BYTES + frameBytes), wordsBytes: align(4 * (ENTRIES_WORD + ENTRY_WORDS * slots)) };
}

export const slabBytes = (l: SlabLayout): number => l.wordsBytes + l.stride * l.slots;
