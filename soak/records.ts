// The records many-to-one senders append into a sink's mailbox. Each names its put, (sender,
// incarnation, sink, seq), and carries bytes derived from that name and a checksum, so the sink
// can tell a whole record from a torn or misplaced one and report exactly which puts arrived.
//
//   u32 magic | u16 length (whole record, a multiple of 8) | u16 sender | u16 incarnation |
//   u16 sink | u32 seq | u32 checksum (FNV-1a of bytes 0..15 and the payload) | u32 0 | payload
import { fill, mix } from './rng';

export const RECORD_MAGIC = 0x4b414f53; // "SOAK"
export const RECORD_HEADER = 24;
export const RECORD_MAX = 512;
/** Records per sink buffer: the ops threshold, so a buffer always has room for the records it counts. */
export const RECORDS_PER_BUFFER = 64;
export const SINK_BUFFER_BYTES = RECORDS_PER_BUFFER * RECORD_MAX;
/** The sinks' mailbox (application range). */
export const SINK_VADDR = 0x5_0000n;

export interface RecordName {
  sender: number;
  incarnation: number;
  sink: number;
  seq: number;
}

/** A record's total length for a put, 24 to 512 bytes in steps of 8, from its name. */
export function recordLength(name: RecordName): number {
  return RECORD_HEADER + 8 * (mix(name.sender, name.incarnation, name.sink, name.seq, 7) % ((RECORD_MAX - RECORD_HEADER) / 8 + 1));
}

function checksum(bytes: Uint8Array, at: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < at + 16; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  for (let i = at + RECORD_HEADER; i < at + len; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

export function encodeRecord(name: RecordName): Buffer {
  const len = recordLength(name);
  const out = Buffer.alloc(len);
  out.writeUInt32LE(RECORD_MAGIC, 0);
  out.writeUInt16LE(len, 4);
  out.writeUInt16LE(name.sender, 6);
  out.writeUInt16LE(name.incarnation, 8);
  out.writeUInt16LE(name.sink, 10);
  out.writeUInt32LE(name.seq, 12);
  fill(out, RECORD_HEADER, len - RECORD_HEADER, mix(name.sender, name.incarnation, name.sink, name.seq));
  out.writeUInt32LE(checksum(out, 0, len), 16);
  return out;
}

export interface ParsedBuffer {
  records: RecordName[];
  /** Sum of the lengths of the whole records found. */
  bytes: number;
  /** Non-zero 8-byte words that belong to no whole record (a torn or foreign put). */
  strayWords: number;
  /** Whole-looking records whose checksum or content is wrong. */
  corrupt: number;
}

/**
 * Every whole record in a retired buffer, scanning it all at 8-byte steps: a put that was half
 * written and not counted leaves bytes no record claims, and the records after it are still found.
 */
export function parseBuffer(buffer: Uint8Array): ParsedBuffer {
  const view = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const out: ParsedBuffer = { records: [], bytes: 0, strayWords: 0, corrupt: 0 };
  const expected = Buffer.alloc(RECORD_MAX);
  for (let at = 0; at + 8 <= view.length; ) {
    if (view.readUInt32LE(at) === RECORD_MAGIC && at + RECORD_HEADER <= view.length) {
      const len = view.readUInt16LE(at + 4);
      if (len >= RECORD_HEADER && len <= RECORD_MAX && len % 8 === 0 && at + len <= view.length) {
        const name: RecordName = {
          sender: view.readUInt16LE(at + 6),
          incarnation: view.readUInt16LE(at + 8),
          sink: view.readUInt16LE(at + 10),
          seq: view.readUInt32LE(at + 12),
        };
        fill(expected, 0, len - RECORD_HEADER, mix(name.sender, name.incarnation, name.sink, name.seq));
        const whole =
          view.readUInt32LE(at + 16) === checksum(view, at, len) &&
          view.readUInt32LE(at + 20) === 0 &&
          len === recordLength(name) &&
          view.compare(expected, 0, len - RECORD_HEADER, at + RECORD_HEADER, at + len) === 0;
        if (whole) {
          out.records.push(name);
          out.bytes += len;
          at += len;
          continue;
        }
        out.corrupt++;
      }
    }
    if (view.readUInt32LE(at) !== 0 || view.readUInt32LE(at + 4) !== 0) out.strayWords++;
    at += 8;
  }
  return out;
}

/** Runs of consecutive numbers, in the order given: [start, count] pairs (a repeat starts a new run). */
export function toRuns(seqs: number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const s of seqs) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === s) last[1]++;
    else runs.push([s, 1]);
  }
  return runs;
}
