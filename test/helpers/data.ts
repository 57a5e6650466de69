// Deterministic test data: seeded bytes and shuffles (a failure replays the same way), and
// self-describing records for the append tests.
import { createCipheriv } from 'node:crypto';
import { mulberry32 } from '../../support/mulberry32';

/** Seeded numbers in [0, 1) (mulberry32): to shuffle and to fill buffers. */
export const rng = mulberry32;

/** len bytes that depend on the seed and on each position (an AES-CTR keystream: fast). */
export function pattern(len: number, seed: number): Buffer {
  const key = Buffer.alloc(16);
  key.writeUInt32LE(seed >>> 0, 0);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(len)), cipher.final()]);
}

export function shuffle<T>(items: T[], seed: number): T[] {
  const next = rng(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

// Record: u32 total length | u16 sender | u16 seq | payload (length - 8 bytes).
export const RECORD_HEADER = 8;

export function recordPayloadByte(sender: number, seq: number, j: number): number {
  return (sender * 31 + seq * 7 + j * 13 + 1) & 0xff;
}

export function recordLength(sender: number, seq: number): number {
  return RECORD_HEADER + ((sender * 211 + seq * 17) % 57);
}

export function makeRecord(sender: number, seq: number): Buffer {
  const length = recordLength(sender, seq);
  const out = Buffer.alloc(length);
  out.writeUInt32LE(length, 0);
  out.writeUInt16LE(sender, 4);
  out.writeUInt16LE(seq, 6);
  for (let j = RECORD_HEADER; j < length; j++) out[j] = recordPayloadByte(sender, seq, j);
  return out;
}

export interface ParsedRecords {
  /** "sender:seq" of every well-formed record, in buffer order. */
  keys: string[];
  /** Offset where parsing stopped (the first byte not covered by a record). */
  end: number;
  /** Human-readable descriptions of malformed records (overlap or torn writes show up here). */
  errors: string[];
}

/** Walks packed records from offset 0 up to `limit` bytes. */
export function parseRecords(buffer: Uint8Array, limit: number): ParsedRecords {
  const view = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const keys: string[] = [];
  const errors: string[] = [];
  let offset = 0;
  while (offset < limit) {
    if (limit - offset < RECORD_HEADER) {
      errors.push(`truncated header at ${offset}`);
      break;
    }
    const length = view.readUInt32LE(offset);
    const sender = view.readUInt16LE(offset + 4);
    const seq = view.readUInt16LE(offset + 6);
    if (length !== recordLength(sender, seq) || offset + length > limit) {
      errors.push(`bad length ${length} at ${offset}`);
      break;
    }
    for (let j = RECORD_HEADER; j < length; j++) {
      if (view[offset + j] !== recordPayloadByte(sender, seq, j)) {
        errors.push(`payload of ${sender}:${seq} differs at byte ${j}`);
        break;
      }
    }
    keys.push(`${sender}:${seq}`);
    offset += length;
  }
  return { keys, end: offset, errors };
}

/** A Buffer view of the same memory (no copy), so toEqual compares like with like. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
