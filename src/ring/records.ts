// The ring's control records, put into a member's control mailbox, never into the data
// mailboxes, so no data frame can be taken for one whatever its bytes hold. A record is a
// 32-byte binary header (generation, sender's rank and mailboxes, kind, around id and origin)
// and, for the kinds that carry one, a msgpack body (the application's record, or a failure's
// texts). decode checks every byte and field (a peer's bytes are untrusted) and throws
// ERR_RVMA_PROTOCOL for anything else.
import { isDeepStrictEqual } from 'node:util';
import { RvmaError } from '../base/errors';
import { packValue, unpackValue } from '../tensor/codec';

/** Layers [start, end) of one rank. */
export interface LayerRange {
  start: number;
  end: number;
}

/** What applications send: with ring.around() or ring.sendControl(). */
export type RingControl =
  /** One worker's new layer range (LEAP's RESIZE_LAYERS). */
  | { type: 'RESIZE_LAYERS'; rank: number; start: number; end: number; isTail: boolean }
  /** Every rank's new layer range, by rank (LEAP's RESIZE_CHAIN). */
  | { type: 'RESIZE_CHAIN'; ranges: LayerRange[] }
  /** Anything else an application needs: any msgpack value. */
  | { type: 'CONTROL'; body: unknown };

export type Direction = 'next' | 'prev';

export const enum Kind {
  /**
   * The sender's ring is complete: its header names the instance of the member its neighbours
   * must know (credits travel natively, as records of their own: native/ring/ring_credit.h).
   */
  Joined = 1,
  /** An application record travelling around the ring from `origin`. */
  Around = 2,
  /** The last rank of an around() applied it: back to the origin. */
  Ack = 3,
  /** An application record for one member. */
  Direct = 4,
  /** A member was lost: the generation is over. */
  Failed = 5,
}

interface Header {
  gen: number;
  /** The sender's rank in `gen` (its node is the one the transport names). */
  fromRank: number;
  /**
   * The base vaddr of the sender's mailboxes in `gen`: which instance of the member sent it (an
   * endpoint that joins a generation again does so with mailboxes of its own).
   */
  base: number;
}

export type WireRecord = Header &
  (
    | { kind: Kind.Joined }
    /** body: the record's msgpack bytes as received (pass() forwards them unchanged); encode packs record without it. */
    | { kind: Kind.Around; id: number; origin: number; record: RingControl; body?: Uint8Array }
    | { kind: Kind.Ack; id: number }
    | { kind: Kind.Direct; record: RingControl }
    | { kind: Kind.Failed; lost: string; reason: string }
  );

/** Longest node id or reason text accepted (a bound on what a peer makes us keep). */
const MAX_TEXT = 4096;
/** Most ranges in a RESIZE_CHAIN. */
export const MAX_RANKS = 65536;

/** 'R', 'K' as the first two bytes. */
const MAGIC = 0x4b52;
const VERSION = 1;
export const RECORD_HEADER_BYTES = 32;

/**
 * Header, little-endian: u16 magic, u8 version, u8 kind, u32 gen, u32 fromRank, u32 id (AROUND
 * and ACK, else 0), u32 origin (AROUND, else 0), u32 0, u64 base (at most 2^53).
 * Body: AROUND and DIRECT the application's record; FAILED [lost, reason]; none for the others.
 * Throws a RangeError for a field out of range, and what msgpack throws for a body it cannot pack.
 */
export function encodeRecord(record: WireRecord): Uint8Array {
  const { gen, fromRank, base } = record;
  switch (record.kind) {
    case Kind.Around:
      return packRecord(Kind.Around, gen, fromRank, base, record.id, record.origin, record.body ?? packValue(record.record));
    case Kind.Ack:
      return packRecord(Kind.Ack, gen, fromRank, base, record.id, 0, undefined);
    case Kind.Direct:
      return packRecord(Kind.Direct, gen, fromRank, base, 0, 0, packValue(record.record));
    case Kind.Failed:
      return packRecord(Kind.Failed, gen, fromRank, base, 0, 0, packValue([record.lost, record.reason]));
    default:
      return packRecord(record.kind, gen, fromRank, base, 0, 0, undefined);
  }
}

/** A record from its fields (body: the msgpack body, if its kind has one). RangeError for a field out of range. */
export function packRecord(kind: Kind, gen: number, fromRank: number, base: number, id: number, origin: number, body: Uint8Array | undefined): Uint8Array {
  if ((gen >>> 0 !== gen) || (fromRank >>> 0 !== fromRank) || (id >>> 0 !== id) || (origin >>> 0 !== origin)) throw new RangeError(`gen ${gen}, fromRank ${fromRank}, id ${id} or origin ${origin} does not fit 32 bits`);
  if (!Number.isSafeInteger(base) || base < 0) throw new RangeError(`base ${base} is not below 2^53`);
  const bytes = new Uint8Array(RECORD_HEADER_BYTES + (body === undefined ? 0 : body.byteLength));
  const view = new DataView(bytes.buffer);
  view.setUint16(0, MAGIC, true);
  view.setUint8(2, VERSION);
  view.setUint8(3, kind);
  view.setUint32(4, gen, true);
  view.setUint32(8, fromRank, true);
  view.setUint32(12, id, true);
  view.setUint32(16, origin, true);
  view.setUint32(24, base % 2 ** 32, true);
  view.setUint32(28, Math.floor(base / 2 ** 32), true);
  if (body !== undefined) bytes.set(body, RECORD_HEADER_BYTES);
  return bytes;
}

function bad(what: string): RvmaError {
  return new RvmaError('ERR_RVMA_PROTOCOL', `ring control record: ${what}`);
}

/** A value for a message: not String(v) of an object, whose toString may be no function (a peer's map). */
function shown(v: unknown): string {
  return v !== null && (typeof v === 'object' || typeof v === 'function') ? typeof v : String(v);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

function text(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.length > MAX_TEXT) throw bad(`${what} must be a string of at most ${MAX_TEXT} characters`);
  return v;
}

/** An application record, checked (also what around() and sendControl() accept from callers). */
export function checkControl(v: unknown, bad_: (what: string) => Error = bad): RingControl {
  if (!isRecord(v)) throw bad_('a control record must be an object with a type');
  const fail = (what: string): never => {
    throw bad_(what);
  };
  const int = (x: unknown, what: string): number =>
    typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : fail(`${what} must be a non-negative integer`);
  switch (v.type) {
    case 'RESIZE_LAYERS': {
      const keys = ['type', 'rank', 'start', 'end', 'isTail'];
      for (const k of Object.keys(v)) if (!keys.includes(k)) fail(`RESIZE_LAYERS has an unknown field "${k}"`);
      const rank = int(v.rank, 'RESIZE_LAYERS.rank');
      const start = int(v.start, 'RESIZE_LAYERS.start');
      const end = int(v.end, 'RESIZE_LAYERS.end');
      if (end < start) fail('RESIZE_LAYERS.end is before its start');
      if (typeof v.isTail !== 'boolean') fail('RESIZE_LAYERS.isTail must be a boolean');
      return { type: 'RESIZE_LAYERS', rank, start, end, isTail: v.isTail as boolean };
    }
    case 'RESIZE_CHAIN': {
      for (const k of Object.keys(v)) if (k !== 'type' && k !== 'ranges') fail(`RESIZE_CHAIN has an unknown field "${k}"`);
      if (!Array.isArray(v.ranges) || v.ranges.length > MAX_RANKS) fail(`RESIZE_CHAIN.ranges must be an array of at most ${MAX_RANKS}`);
      const ranges = (v.ranges as unknown[]).map((r, i) => {
        if (!isRecord(r) || Object.keys(r).some((k) => k !== 'start' && k !== 'end')) fail(`RESIZE_CHAIN.ranges[${i}] must be { start, end }`);
        const range = r as Record<string, unknown>;
        const start = int(range.start, `RESIZE_CHAIN.ranges[${i}].start`);
        const end = int(range.end, `RESIZE_CHAIN.ranges[${i}].end`);
        if (end < start) fail(`RESIZE_CHAIN.ranges[${i}] ends before it starts`);
        return { start, end };
      });
      return { type: 'RESIZE_CHAIN', ranges };
    }
    case 'CONTROL':
      for (const k of Object.keys(v)) if (k !== 'type' && k !== 'body') fail(`CONTROL has an unknown field "${k}"`);
      return { type: 'CONTROL', body: v.body };
    default:
      return fail(`unknown control type ${JSON.stringify(shown(v.type)).slice(0, 40)}`);
  }
}

/**
 * A peer's application record, which the application may send on (around(), sendControl()): a
 * CONTROL body our encoder cannot carry unchanged (msgpackr extensions such as a bigint beyond
 * 64 bits, a Set, a typed array) is refused.
 */
function carried(record: RingControl): RingControl {
  if (record.type !== 'CONTROL') return record;
  let again: unknown;
  try {
    again = unpackValue(packValue(record.body));
  } catch {
    throw bad('CONTROL.body cannot be encoded again');
  }
  if (!isDeepStrictEqual(again, record.body)) throw bad('CONTROL.body changes when encoded again');
  return record;
}

/** The id of an AROUND record of ours (encoded by encodeRecord), started by `origin`; else undefined. */
export function aroundIdOf(bytes: Uint8Array, origin: number): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return view.getUint8(3) === Kind.Around && view.getUint32(16, true) === origin ? view.getUint32(12, true) : undefined;
}

/** The msgpack value of a body. */
function unpacked(bytes: Uint8Array): unknown {
  try {
    return unpackValue(bytes);
  } catch (error) {
    if (error instanceof RvmaError) throw error;
    throw bad(`body is not msgpack (${(error as Error).message})`);
  }
}

export function decodeRecord(bytes: Uint8Array): WireRecord {
  if (bytes.byteLength < RECORD_HEADER_BYTES) throw bad(`${bytes.byteLength} bytes, shorter than the ${RECORD_HEADER_BYTES}-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint16(0, true) !== MAGIC) throw bad('no record magic');
  if (view.getUint8(2) !== VERSION) throw bad(`version ${view.getUint8(2)}, not ${VERSION}`);
  const kind = view.getUint8(3);
  const gen = view.getUint32(4, true);
  const fromRank = view.getUint32(8, true);
  const id = view.getUint32(12, true);
  const origin = view.getUint32(16, true);
  if (view.getUint32(20, true) !== 0) throw bad('reserved bytes are not 0');
  const high = view.getUint32(28, true);
  if (high >= 2 ** 21) throw bad('base is 2^53 or more');
  const base = high * 2 ** 32 + view.getUint32(24, true);
  const body = bytes.subarray(RECORD_HEADER_BYTES);
  const expect = (what: string, ok: boolean): void => {
    if (!ok) throw bad(what);
  };
  switch (kind) {
    case Kind.Joined:
      expect('a join notice has an id, an origin or a body', id === 0 && origin === 0 && body.byteLength === 0);
      return { gen, fromRank, base, kind: Kind.Joined };
    case Kind.Around:
      return { gen, fromRank, base, kind: Kind.Around, id, origin, record: carried(checkControl(unpacked(body))), body: body.slice() };
    case Kind.Ack:
      expect('an ack has an origin or a body', origin === 0 && body.byteLength === 0);
      return { gen, fromRank, base, kind: Kind.Ack, id };
    case Kind.Direct:
      expect('a direct record has an id or an origin', id === 0 && origin === 0);
      return { gen, fromRank, base, kind: Kind.Direct, record: carried(checkControl(unpacked(body))) };
    case Kind.Failed: {
      expect('a failure notice has an id or an origin', id === 0 && origin === 0);
      const v = unpacked(body);
      if (!Array.isArray(v) || v.length !== 2) throw bad('a failure notice\'s body must be [lost, reason]');
      return { gen, fromRank, base, kind: Kind.Failed, lost: text(v[0], 'lost'), reason: text(v[1], 'reason') };
    }
    default:
      throw bad(`unknown kind ${kind}`);
  }
}
