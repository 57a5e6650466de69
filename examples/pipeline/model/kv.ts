// One layer's KV cache and its wire form, for moving a layer to another process. Decoding
// treats the bytes as untrusted peer input: every header field is checked against the size.
import * as os from 'node:os';

/** k and v are [length, heads, headDim], row-major float32 (position-major, as the runner keeps them). */
export interface KvState {
  layer: number;
  length: number;
  heads: number;
  headDim: number;
  k: Float32Array;
  v: Float32Array;
}

// Layout, little-endian: magic "RVKV", then u32 layer, length, heads, headDim, then k, then v.
const MAGIC = 0x564b5652; // "RVKV" read as a little-endian u32
export const KV_HEADER_BYTES = 20;
// Far above any model here, low enough that sizes computed from them stay exact.
const MAX_FIELD = 1 << 20;

// The float payload is copied as raw bytes; both ends must agree on byte order.
if (os.endianness() !== 'LE') throw new Error('the KV wire format assumes a little-endian host');

function checkField(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min || value > MAX_FIELD) {
    throw new Error(`KV ${name} ${value} out of range ${min}..${MAX_FIELD}`);
  }
}

export function kvElements(heads: number, length: number, headDim: number): number {
  return heads * length * headDim;
}

export function encodeKv(state: KvState): Uint8Array {
  const { layer, length, heads, headDim, k, v } = state;
  checkField('layer', layer, 0);
  checkField('length', length, 0);
  checkField('heads', heads, 1);
  checkField('headDim', headDim, 1);
  const n = kvElements(heads, length, headDim);
  if (k.length !== n || v.length !== n) throw new Error(`KV of layer ${layer}: k/v have ${k.length}/${v.length} values, expected ${n}`);
  const out = new Uint8Array(KV_HEADER_BYTES + 8 * n);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, layer, true);
  view.setUint32(8, length, true);
  view.setUint32(12, heads, true);
  view.setUint32(16, headDim, true);
  out.set(new Uint8Array(k.buffer, k.byteOffset, 4 * n), KV_HEADER_BYTES);
  out.set(new Uint8Array(v.buffer, v.byteOffset, 4 * n), KV_HEADER_BYTES + 4 * n);
  return out;
}

export function decodeKv(bytes: Uint8Array): KvState {
  if (!(bytes instanceof Uint8Array)) throw new Error('KV bytes must be a Uint8Array');
  if (bytes.byteLength < KV_HEADER_BYTES) throw new Error(`KV message of ${bytes.byteLength} bytes is shorter than its ${KV_HEADER_BYTES}-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw new Error('KV message has a bad magic number');
  const layer = view.getUint32(4, true);
  const length = view.getUint32(8, true);
  const heads = view.getUint32(12, true);
  const headDim = view.getUint32(16, true);
  checkField('layer', layer, 0);
  checkField('length', length, 0);
  checkField('heads', heads, 1);
  checkField('headDim', headDim, 1);
  // BigInt: three fields up to 2^20 multiply past 2^53, where Number would round.
  const expected = BigInt(KV_HEADER_BYTES) + 8n * BigInt(heads) * BigInt(length) * BigInt(headDim);
  if (BigInt(bytes.byteLength) !== expected) {
    throw new Error(`KV message declares ${expected} bytes (layer ${layer}, length ${length}, ${heads}x${headDim}) but has ${bytes.byteLength}`);
  }
  const n = kvElements(heads, length, headDim);
  const base = bytes.byteOffset + KV_HEADER_BYTES;
  // slice() copies into a fresh, aligned buffer: the input may sit at any offset and may be reused.
  const k = new Float32Array(bytes.buffer.slice(base, base + 4 * n));
  const v = new Float32Array(bytes.buffer.slice(base + 4 * n, base + 8 * n));
  return { layer, length, heads, headDim, k, v };
}
