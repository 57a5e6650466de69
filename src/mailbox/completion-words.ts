// JS view of the native completion words (layout: native/core/completion_words.h). Reads
// use Atomics so a record written by the progress thread is seen whole.

export const SLOT_WORDS = 8;
const EPOCH = 0;
const BUFFER_INDEX = 1;
const BYTES = 2;
const OPS = 4;
const SEQ = 7;
export const SLOTS_PER_PAGE = 4096;

/** The last completion as the completion words show it (no native call). */
export interface CompletionWordsSnapshot {
  /** Completed epochs, modulo 2^32. */
  epoch: number;
  bufferIndex: number;
  bytes: number;
  ops: number;
}

export class CompletionWordsView {
  constructor(
    private readonly words: Uint32Array,
    private readonly base: number,
  ) {}

  epoch(): number {
    return Atomics.load(this.words, this.base + EPOCH);
  }

  /** A consistent copy of the whole record (seqlock: retried while a write is in progress). */
  snapshot(): CompletionWordsSnapshot {
    const w = this.words;
    const b = this.base;
    for (;;) {
      const seq = Atomics.load(w, b + SEQ);
      if (seq & 1) continue;
      const snap = {
        epoch: Atomics.load(w, b + EPOCH),
        bufferIndex: Atomics.load(w, b + BUFFER_INDEX),
        bytes: Atomics.load(w, b + BYTES) + Atomics.load(w, b + BYTES + 1) * 2 ** 32,
        ops: Atomics.load(w, b + OPS) + Atomics.load(w, b + OPS + 1) * 2 ** 32,
      };
      if (Atomics.load(w, b + SEQ) === seq) return snap;
    }
  }
}
