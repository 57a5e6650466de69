// Rings for tests: members on any provider (closed after each test), frames that carry their
// index and seeded bytes so that every hop and the sink can check order, exactly-once and
// every byte, and small waits on control records and failures. Every wait is bounded by WAIT.
import { type Endpoint, type ProgressMode, Ring, type RingControlMessage, type RingFailure, type RingFrame } from '../../src';
import { type WireRecord } from '../../src/ring/records';
import { uniqueNodeId } from './endpoints';

/** Every wait of the ring suites is bounded by this (a lost frame fails a test, never hangs it). */
export const WAIT = 10_000;

export type JoinOptions = Parameters<typeof Ring.join>[1];

export interface RingTracker {
  /** A new endpoint of the suite's provider, closed after the test. */
  endpoint(progress?: ProgressMode, label?: string): Promise<Endpoint>;
  /** Ring.join, with the ring closed after the test. */
  join(e: Endpoint, options: JoinOptions): Promise<Ring>;
  /** A complete ring of `size` new endpoints, by rank. */
  ringOf(size: number, progress: ProgressMode, options?: Omit<JoinOptions, 'group'>): Promise<Ring[]>;
}

/** Call once per describe scope: its rings and endpoints are closed after every test. */
export function trackRings(create: (progress: ProgressMode, nodeId: string) => Promise<Endpoint>): RingTracker {
  const rings: Ring[] = [];
  const endpoints: Endpoint[] = [];
  afterEach(async () => {
    await Promise.all(rings.splice(0).map((r) => r.close()));
    await Promise.all(endpoints.splice(0).map((e) => e.close()));
  });
  const endpoint = async (progress: ProgressMode = 'loop', label = 'ring'): Promise<Endpoint> => {
    const e = await create(progress, uniqueNodeId(label));
    endpoints.push(e);
    return e;
  };
  const join = async (e: Endpoint, options: JoinOptions): Promise<Ring> => {
    const ring = await Ring.join(e, options);
    rings.push(ring);
    return ring;
  };
  return {
    endpoint,
    join,
    async ringOf(size, progress, options = {}) {
      const group = uniqueNodeId('g');
      const eps = await Promise.all([...Array(size).keys()].map(() => endpoint(progress)));
      const joined = await Promise.all(eps.map((e) => join(e, { group, size, timeout: WAIT, ...options })));
      return [...joined].sort((a, b) => a.rank - b.rank);
    },
  };
}

/** Deterministic bytes of frame i. */
export function frameData(i: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = (i * 2654435761) >>> 0;
  for (let j = 0; j < size; j++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[j] = x >>> 24;
  }
  return out;
}

export function indexHeader(i: number): Uint8Array {
  const h = new Uint8Array(4);
  new DataView(h.buffer).setUint32(0, i, true);
  return h;
}

export function indexOf(frame: RingFrame): number {
  if (frame.header.byteLength !== 4) return -1;
  return new DataView(frame.header.buffer, frame.header.byteOffset, 4).getUint32(0, true);
}

const view = (a: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
export const same = (a: Uint8Array, b: Uint8Array) => view(a).equals(view(b));
export const bytesOf = (a: Uint8Array) => [...a];

/** The promise, with a rejection nobody awaits (a test that failed earlier) not reported as unhandled. */
export function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

export type Dir = 'next' | 'prev';
export const sendOn = (ring: Ring, dir: Dir) => (dir === 'next' ? ring.sendNext.bind(ring) : ring.sendPrev.bind(ring));
/** Frames that travelled in direction `dir` arrive from the rank before, in that direction. */
export const recvOn = (ring: Ring, dir: Dir) => (dir === 'next' ? ring.recvPrev.bind(ring) : ring.recvNext.bind(ring));

/** Sends `count` indexed frames of `size` data bytes, up to 64 unsettled. */
export async function source(ring: Ring, dir: Dir, count: number, size: number): Promise<void> {
  const send = sendOn(ring, dir);
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    inflight.push(quiet(send([indexHeader(i), frameData(i, size)], { timeout: WAIT })));
    if (inflight.length >= 64) await inflight.shift();
  }
  await Promise.all(inflight);
}

/** Receives `count` frames and sends each on in place, releasing it once its send settled. */
export async function forward(ring: Ring, dir: Dir, count: number): Promise<void> {
  const recv = recvOn(ring, dir);
  const send = sendOn(ring, dir);
  const sends: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const frame = await recv({ timeout: WAIT });
    sends.push(quiet(send([frame.header, frame.data], { timeout: WAIT }).finally(() => frame.release())));
  }
  await Promise.all(sends);
}

/** Receives `count` frames and counts those out of order, or whose bytes differ. */
export async function sink(ring: Ring, dir: Dir, count: number, size: number): Promise<{ received: number; bad: number; firstBad?: object }> {
  const recv = recvOn(ring, dir);
  let bad = 0;
  let firstBad: object | undefined;
  for (let i = 0; i < count; i++) {
    const frame = await recv({ timeout: WAIT });
    const index = indexOf(frame);
    if (index !== i || frame.seq !== i || !same(frame.data, frameData(i, size))) {
      bad++;
      firstBad ??= { i, index, seq: frame.seq, bytes: frame.data.byteLength };
    }
    frame.release();
  }
  return { received: count, bad, firstBad };
}

/** `count` frames of `size` bytes from rank 0 around the ring in both directions at once, checked at rank 0. */
export async function aroundBothWays(ring: Ring[], count: number, size: number): Promise<void> {
  const work: Promise<unknown>[] = [];
  for (const dir of ['next', 'prev'] as const) {
    work.push(source(ring[0], dir, count, size));
    for (const r of ring.slice(1)) work.push(forward(r, dir, count));
  }
  const sinks = (['next', 'prev'] as const).map((dir) => quiet(sink(ring[0], dir, count, size)));
  await Promise.all([...work, ...sinks]);
  for (const result of await Promise.all(sinks)) expect(result).toEqual({ received: count, bad: 0, firstBad: undefined });
}

/** Collects `n` records with pollControl() alone (never control()), waiting at most WAIT. */
export async function pollN(ring: Ring, n: number): Promise<RingControlMessage[]> {
  const got: RingControlMessage[] = [];
  const deadline = Date.now() + WAIT;
  while (got.length < n && Date.now() < deadline) {
    const m = ring.pollControl();
    if (m) got.push(m);
    else await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return got;
}

/** The first 'failed' event of a ring, and how many it emitted. */
export function failures(ring: Ring): { first: Promise<RingFailure>; events: RingFailure[] } {
  const events: RingFailure[] = [];
  ring.on('failed', (f: RingFailure) => events.push(f));
  const first = new Promise<RingFailure>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no failed event')), WAIT);
    ring.once('failed', (f: RingFailure) => {
      clearTimeout(timer);
      resolve(f);
    });
  });
  first.catch(() => undefined);
  return { first, events };
}

/**
 * A record that would be valid on the wire from `ring` (its generation, node id and rank, and the
 * base of a fresh endpoint's first ring, 0x100).
 */
export function wireFrom(ring: Ring, body: Record<string, unknown>): WireRecord {
  return { ...body, gen: ring.generation, fromRank: ring.rank, base: 0x100 } as unknown as WireRecord;
}

/** A native ring credit record (native/ring/ring_credit.h): what a neighbour's credits mailbox takes. */
export function creditRecord(dir: 0 | 1, total: number, frameBytes: number, base: bigint): Uint8Array {
  const b = Buffer.alloc(24);
  b.writeUInt16LE(0x4352, 0);
  b[2] = 1;
  b[3] = dir;
  b.writeUInt32LE(frameBytes, 4);
  b.writeBigUInt64LE(BigInt(total), 8);
  b.writeBigUInt64LE(base, 16);
  return b;
}
