// mulberry32: a small seeded 32-bit PRNG, uniform in [0, 1), on integer operations only, so it
// draws the same numbers on every engine. The pipeline example's weights, the tests' data and
// the soak's fault schedule draw from it.

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
