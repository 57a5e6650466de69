// Wire forms: tensor metadata as msgpack, string tensors as length-prefixed UTF-8.
import { Packr } from 'msgpackr';
import { RvmaError } from '../base/errors';
import { type DType, elementSize, isDType } from './dtypes';
import { type Tensor, elementCount, tensorBytes } from './tensor';

/** Largest tensor content the rendezvous moves (the size of one posted buffer). */
export const MAX_CONTENT_BYTES = 2 ** 40;

export interface TensorMeta {
  dtype: DType;
  shape: number[];
  isDead: boolean;
  /** Bytes of content that follow the meta (encoded size for strings). */
  byteSize: number;
}

const packr = new Packr({ useRecords: false, int64AsType: 'number' });

export function packValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

export function unpackValue(bytes: Uint8Array): unknown {
  if (!declaredItemsFit(bytes)) throw new RvmaError('ERR_RVMA_PROTOCOL', 'msgpack declares more items than its bytes hold');
  return packr.unpack(bytes);
}

/**
 * Whether no array or map in a msgpack byte stream declares more items than the bytes left
 * could hold (one byte each at least), and no header or payload runs past the end. msgpackr
 * allocates an array of the declared length before reading an item of it: the five bytes
 * dd 01 ff ff ff (2^25 - 1 items) cost the receiver 256 MiB and 0.2 to 1.5 s of CPU (node 20,
 * 2-vCPU host). Items after the first are walked too: some msgpackr extensions read the item
 * that follows them.
 */
function declaredItemsFit(b: Uint8Array): boolean {
  let at = 0;
  let pending = 0; // items declared by the containers seen, not reached yet
  while (at < b.length) {
    const t = b[at++];
    let items = 0;
    if (t < 0x80 || t >= 0xe0) items = 0; // fixint
    else if (t < 0x90) items = 2 * (t & 0x0f); // fixmap
    else if (t < 0xa0) items = t & 0x0f; // fixarray
    else if (t < 0xc0) at += t & 0x1f; // fixstr
    else {
      const width = LENGTH_WIDTH[t - 0xc0];
      if (at + width > b.length) return false;
      let n = 0;
      for (let k = 0; k < width; k++) n = n * 256 + b[at++];
      if (t >= 0xde) items = 2 * n; // map 16/32
      else if (t >= 0xdc) items = n; // array 16/32
      else at += FIXED_BYTES[t - 0xc0] + n; // n bytes of bin, ext or str
    }
    pending = (pending > 0 ? pending - 1 : 0) + items;
    if (at > b.length || pending > b.length - at) return false;
  }
  return pending === 0;
}

// Per type byte 0xc0..0xdf (msgpack spec): the width of its length field, and the bytes it
// holds besides what that length counts (the type of an ext, the value of a number).
const LENGTH_WIDTH = [0, 0, 0, 0, 1, 2, 4, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 2, 4, 2, 4];
const FIXED_BYTES = [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 3, 5, 9, 17, 0, 0, 0, 0, 0, 0, 0];

export function sameMeta(a: TensorMeta | undefined, b: TensorMeta): boolean {
  return (
    a !== undefined &&
    a.dtype === b.dtype &&
    a.isDead === b.isDead &&
    a.byteSize === b.byteSize &&
    a.shape.length === b.shape.length &&
    a.shape.every((d, i) => d === b.shape[i])
  );
}

/** Checks a meta record that arrived from a peer. */
export function checkMeta(value: unknown): TensorMeta {
  const m = value as TensorMeta;
  const ok =
    m !== null &&
    typeof m === 'object' &&
    isDType(m.dtype) &&
    Array.isArray(m.shape) &&
    m.shape.every((d) => Number.isSafeInteger(d) && d >= 0) &&
    Number.isSafeInteger(elementCount(m.shape)) &&
    typeof m.isDead === 'boolean' &&
    Number.isSafeInteger(m.byteSize) &&
    m.byteSize >= 0 &&
    m.byteSize <= MAX_CONTENT_BYTES &&
    sizeFits(m);
  if (!ok) throw new RvmaError('ERR_RVMA_PROTOCOL', 'malformed tensor meta from peer');
  return { dtype: m.dtype, shape: [...m.shape], isDead: m.isDead, byteSize: m.byteSize };
}

/**
 * Whether the byte size is what metaOf gives for that dtype and shape: the receiver views the
 * content as the shape says, so a size that disagrees would make a tensor whose data is not
 * its shape (or a string tensor without room for its lengths).
 */
function sizeFits(m: TensorMeta): boolean {
  if (m.isDead) return m.byteSize === 0;
  const count = elementCount(m.shape);
  return m.dtype === 'string' ? m.byteSize >= 4 * count : m.byteSize === count * elementSize(m.dtype);
}

/** The content bytes of a tensor: numeric tensors viewed in place, strings encoded. */
export function encodeContent(t: Tensor): Uint8Array {
  if (t.dtype !== 'string') return tensorBytes(t);
  const strings = (t.data as string[]).map((s) => Buffer.from(s, 'utf8'));
  const out = Buffer.allocUnsafe(4 * strings.length + strings.reduce((n, s) => n + s.length, 0));
  let at = 0;
  for (const s of strings) at = out.writeUInt32LE(s.length, at);
  for (const s of strings) at += s.copy(out, at);
  return out;
}

export function decodeStrings(shape: number[], bytes: Uint8Array): string[] {
  const count = elementCount(shape);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 4 * count) throw new RvmaError('ERR_RVMA_PROTOCOL', 'string tensor content is truncated');
  const out: string[] = [];
  let at = 4 * count;
  for (let i = 0; i < count; i++) {
    const len = buf.readUInt32LE(4 * i);
    if (at + len > buf.length) throw new RvmaError('ERR_RVMA_PROTOCOL', 'string tensor content is truncated');
    out.push(buf.toString('utf8', at, at + len));
    at += len;
  }
  // The meta's byte size is the encoded size: bytes past the last string are not this tensor.
  if (at !== buf.length) {
    throw new RvmaError('ERR_RVMA_PROTOCOL', `string tensor content has ${buf.length - at} bytes past its last string`);
  }
  return out;
}

export function metaOf(t: Tensor, isDead: boolean, content: Uint8Array): TensorMeta {
  return { dtype: t.dtype, shape: [...t.shape], isDead, byteSize: isDead ? 0 : content.byteLength };
}
