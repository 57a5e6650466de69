// The memory a ring shares with its native half (native/ring/): a direction's slab (words where
// arrived frames are published, then one buffer per slot: ring_inbound.h, SlabLayout) and the
// credits block (totals per direction, then the credit records' buffers: ring_credits.h).
import { FRAME_HEADER_BYTES } from './frame';

/** A direction's slab, in 32-bit words from its start (words 1-3: the credits granted, read natively). */
export const NOTIFY_WORD = 0;
export const RECEIVED_WORD = 4;
export const GRANT_DUE_WORD = 5;
export const CREDITS_SENT_WORD = 6;
export const ENTRIES_WORD = 8;
export const ENTRY_WORDS = 4;

/** The credits block, in 32-bit words: records taken (then dropped), then per direction (next, prev) DIR_WORDS words. */
export const CREDITS_TAKEN_WORD = 0;
export const DIRS_WORD = 8;
export const DIR_WORDS = 8;
export const DIR_GRANTED = 0;
export const DIR_FRAME_BYTES = 3;
export const DIR_WAITING = 4;
/** Bytes of words, then 16 buffers of 32 bytes for the credit records. */
export const CREDITS_WORDS_BYTES = 128;
export const CREDITS_BLOCK_BYTES = CREDITS_WORDS_BYTES + 16 * 32;

const ALIGN = 64;
const TWO_32 = 2 ** 32;

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

/**
 * A 64-bit count the native half publishes at words[at..at+2] (native/ring/shared_u64.h): a
 * sequence word, odd while it is written (by a progress thread), then the low and high halves.
 */
export function readSharedU64(words: Uint32Array, at: number): number {
  for (;;) {
    const seq = Atomics.load(words, at);
    const value = Atomics.load(words, at + 1) + Atomics.load(words, at + 2) * TWO_32;
    if (seq % 2 === 0 && Atomics.load(words, at) === seq) return value;
  }
}
