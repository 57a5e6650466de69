// The ring's control records: msgpack maps put into a member's control mailbox, never into
// the data mailboxes, so no data frame can be taken for one whatever its bytes hold. Every
// record names its generation and sender; decode checks every field (a peer's bytes are
// untrusted) and throws ERR_RVMA_PROTOCOL for anything else.
import { isDeepStrictEqual } from 'node:util';
import { RvmaError } from '../mailbox/errors';
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
  /** The sender's node id and rank in `gen`. */
  from: string;
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
    | { kind: Kind.Around; id: number; origin: number; record: RingControl }
    | { kind: Kind.Ack; id: number }
    | { kind: Kind.Direct; record: RingControl }
    | { kind: Kind.Failed; lost: string; reason: string }
  );

/** Longest node id or reason text accepted (a bound on what a peer makes us keep). */
const MAX_TEXT = 4096;
/** Most ranges in a RESIZE_CHAIN. */
export const MAX_RANKS = 65536;

export function encodeRecord(record: WireRecord): Uint8Array {
  return packValue(record);
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

function count(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(`${what} must be a non-negative integer`);
  return v;
}

function text(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.length > MAX_TEXT) throw bad(`${what} must be a string of at most ${MAX_TEXT} characters`);
  return v;
}

function onlyKeys(o: Record<string, unknown>, keys: string[], what: string): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) throw bad(`${what} has an unknown field "${k}"`);
  for (const k of keys) if (!(k in o)) throw bad(`${what} lacks "${k}"`);
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
 * A peer's application record, which pass() encodes again: a CONTROL body our encoder cannot
 * carry unchanged (msgpackr extensions such as a bigint beyond 64 bits, a Set, a typed array) is refused.
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

export function decodeRecord(bytes: Uint8Array): WireRecord {
  let v: unknown;
  try {
    v = unpackValue(bytes);
  } catch (error) {
    if (error instanceof RvmaError) throw error;
    throw bad(`not msgpack (${(error as Error).message})`);
  }
  if (!isRecord(v)) throw bad('not a map');
  // The header fields go into each literal: a spread followed by new keys costs about 1.5 µs per
  // key in V8 11 (its slow path), more than the unpack itself.
  const gen = count(v.gen, 'gen');
  const from = text(v.from, 'from');
  const fromRank = count(v.fromRank, 'fromRank');
  const base = count(v.base, 'base');
  const common = ['gen', 'from', 'fromRank', 'base', 'kind'];
  switch (v.kind) {
    case Kind.Joined:
      onlyKeys(v, common, 'a join notice');
      return { gen, from, fromRank, base, kind: Kind.Joined };
    case Kind.Around:
      onlyKeys(v, [...common, 'id', 'origin', 'record'], 'an around record');
      return { gen, from, fromRank, base, kind: Kind.Around, id: count(v.id, 'id'), origin: count(v.origin, 'origin'), record: carried(checkControl(v.record)) };
    case Kind.Ack:
      onlyKeys(v, [...common, 'id'], 'an ack');
      return { gen, from, fromRank, base, kind: Kind.Ack, id: count(v.id, 'id') };
    case Kind.Direct:
      onlyKeys(v, [...common, 'record'], 'a direct record');
      return { gen, from, fromRank, base, kind: Kind.Direct, record: carried(checkControl(v.record)) };
    case Kind.Failed:
      onlyKeys(v, [...common, 'lost', 'reason'], 'a failure notice');
      return { gen, from, fromRank, base, kind: Kind.Failed, lost: text(v.lost, 'lost'), reason: text(v.reason, 'reason') };
    default:
      throw bad(`unknown kind ${shown(v.kind).slice(0, 20)}`);
  }
}
