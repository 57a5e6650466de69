// Seeded randomness for the soak: the fault schedule, victims and record sizes replay the same
// way for the same --seed (timing still varies from run to run).
import { mulberry32 } from '../support/mulberry32';

export type Random = () => number;

/** Seeded numbers in [0, 1) (mulberry32): to pick victims and shuffle. */
export const rng: (seed: number) => Random = mulberry32;

export function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)];
}

/** A number in [lo, hi). */
export function between(random: Random, lo: number, hi: number): number {
  return lo + random() * (hi - lo);
}

export function shuffle<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A 32-bit seed derived from several integers (a role's data, a step's tensor). */
export function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p & 0xffff), 0x01000193);
    h = Math.imul(h ^ (p >>> 16), 0x01000193);
    h = Math.imul(h ^ Math.floor(p / 2 ** 32), 0x01000193);
  }
  return h >>> 0 || 1;
}

/** n deterministic bytes for a seed (xorshift32), written into out at `at`. */
export function fill(out: Uint8Array, at: number, n: number, seed: number): void {
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[at + i] = x & 0xff;
  }
}
