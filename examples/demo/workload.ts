// What the demo moves: per step and tensor index, a shape that changes every few steps
// (so the meta-data re-request path runs) and contents anyone can regenerate to check.
import type { Tensor } from '../../src';

const SHAPE_PERIOD = 8;

export function shapeOf(step: number, index: number): number[] {
  const rows = 16 << ((Math.floor(step / SHAPE_PERIOD) + index) % 5); // 16 .. 256 rows
  return [rows, 256];
}

/** Deterministic float32 contents from (step, source rank, index): xorshift32. */
export function tensorFor(step: number, src: number, index: number): Tensor {
  const shape = shapeOf(step, index);
  const words = new Uint32Array(shape[0] * shape[1]);
  let x = (step * 2654435761) ^ (src * 40503) ^ (index * 2246822519) ^ 0x9e3779b9;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x & 0x3f7fffff; // finite float32 bit patterns only
  }
  return { dtype: 'float32', shape, data: new Float32Array(words.buffer) };
}

export function sameBytes(a: Tensor, b: Tensor): boolean {
  if (a.dtype !== b.dtype || a.shape.join() !== b.shape.join()) return false;
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  return Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(y.buffer, y.byteOffset, y.byteLength));
}
