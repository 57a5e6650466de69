// What the rendezvous producer and consumer share: the harness's session (both sides run the
// steps of one session; a failure on either side asks for the next), the tensors of a step and
// the devices of the pair.
import type { Tensor } from '../../src';
import { fill, mix } from '../rng';
import { isStopping, onCommand, sleep } from './common';

let current: number | undefined;
let changed = new AbortController();
onCommand((m) => {
  if (m.type !== 'session' || m.id === current) return;
  current = m.id;
  changed.abort();
  changed = new AbortController();
});

export const session = (): number | undefined => current;

/** Aborted when the harness starts another session: waits of the old one end at once. */
export const sessionSignal = (): AbortSignal => changed.signal;

export function prefixed(counters: object): Record<string, number> {
  return Object.fromEntries(Object.entries(counters).map(([k, v]) => [`rdv.${k}`, Number(v)]));
}

/** Waits (bounded) for a session other than `than`; undefined when stopping or none came. */
export async function nextSession(than: number | undefined, timeoutMs: number): Promise<number | undefined> {
  for (const until = Date.now() + timeoutMs; Date.now() < until && !isStopping(); ) {
    if (current !== undefined && current !== than) return current;
    await sleep(20);
  }
  return undefined;
}

/** Steps of a session: s * 1e6 + i, so no two sessions share one. */
export const stepOf = (s: number, i: number): number => s * 1_000_000 + i;

export const device = (task: string): string => `${task}/device:CPU:0`;

/** Tensor k of step i of session s: float32, a shape that holds for 8 steps, bytes from (s, i, k). */
export function tensorFor(s: number, i: number, k: number): Tensor {
  const n = 64 << ((Math.floor(i / 8) + k) % 7);
  const bytes = new Uint8Array(n * 4);
  fill(bytes, 0, bytes.length, mix(s, i, k, 0x7e));
  return { dtype: 'float32', shape: [n], data: new Float32Array(bytes.buffer) };
}

/** The consumer's answer for step i: [s, i]. */
export function ackFor(s: number, i: number): Tensor {
  return { dtype: 'int32', shape: [2], data: new Int32Array([s, i]) };
}

export function sameTensor(got: Tensor, want: Tensor): boolean {
  if (got.dtype !== want.dtype || got.shape.length !== want.shape.length || got.shape.some((d, j) => d !== want.shape[j])) return false;
  const a = got.data as ArrayBufferView;
  const b = want.data as ArrayBufferView;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
