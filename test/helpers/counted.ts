// Counted puts in tests: 8-byte records that name their sender and sequence number (and carry
// a check word, so a torn or misplaced record is seen), a tally of the records a receiver
// got, and the window loop of docs/api.md. test/fixtures/agent.js writes the same records.
import { type PutCounter, type PutCounterState, type PutFailure } from '../../src';

export const RECORD_BYTES = 8;
/** Sequence numbers take the low 20 bits of a record's first word, the sender the bits above. */
const SEQ_BITS = 20;
export const MAX_SEQ = 2 ** SEQ_BITS;

/** The check word of a record whose first word is `word`. */
export function recordCheck(word: number): number {
  return (Math.imul(word ^ 0x5bd1e995, 0x9e3779b1) ^ 0xa5a5a5a5) >>> 0;
}

/** Writes the record (sender, seq) into out at offset: u32 sender << 20 | seq, u32 check. */
export function writeRecord(out: Buffer, sender: number, seq: number, offset = 0): Buffer {
  const word = sender * MAX_SEQ + seq;
  out.writeUInt32LE(word, offset);
  out.writeUInt32LE(recordCheck(word), offset + 4);
  return out;
}

export function record(sender: number, seq: number): Buffer {
  return writeRecord(Buffer.alloc(RECORD_BYTES), sender, seq);
}

/** Which records a receiver got, per sender: each must come exactly once, intact. */
export class RecordTally {
  private readonly seen: Uint8Array[];
  duplicates = 0;
  corrupt = 0;
  total = 0;

  constructor(
    senders: number,
    private readonly perSender: number,
  ) {
    this.seen = Array.from({ length: senders }, () => new Uint8Array(perSender));
  }

  /** Counts the records in the first `bytes` bytes of buffer. */
  add(buffer: Uint8Array, bytes: number): void {
    const view = Buffer.from(buffer.buffer, buffer.byteOffset, bytes);
    for (let at = 0; at + RECORD_BYTES <= bytes; at += RECORD_BYTES) {
      const word = view.readUInt32LE(at);
      const sender = Math.floor(word / MAX_SEQ);
      const seq = word % MAX_SEQ;
      if (view.readUInt32LE(at + 4) !== recordCheck(word) || sender >= this.seen.length || seq >= this.perSender) {
        this.corrupt++;
        continue;
      }
      if (this.seen[sender][seq]++) this.duplicates++;
      this.total++;
    }
  }

  /** Records of sender that never came (seq in [from, to)). */
  missing(sender: number, from = 0, to = this.perSender): number {
    let n = 0;
    for (let seq = from; seq < to; seq++) if (!this.seen[sender][seq]) n++;
    return n;
  }

  has(sender: number, seq: number): boolean {
    return this.seen[sender][seq] > 0;
  }
}

export const WINDOW = 256;

/**
 * Issues count puts through put(i), waiting whenever WINDOW are unsettled until half of them
 * are (the loop of docs/api.md), then for all of them. Every wait is bounded.
 */
export async function issueWindowed(
  counter: PutCounter,
  count: number,
  put: (i: number) => void,
  timeout = 30_000,
): Promise<PutCounterState> {
  for (let i = 0; i < count; i++) {
    put(i);
    if (counter.issued - counter.settled >= WINDOW) await counter.reach(counter.issued - WINDOW / 2, { timeout });
  }
  return counter.reach(counter.issued, { timeout });
}

/** Every 'failed' event of the counter, from now on. */
export function failuresOf(counter: PutCounter): PutFailure[] {
  const failures: PutFailure[] = [];
  counter.on('failed', (f: PutFailure) => failures.push(f));
  return failures;
}
