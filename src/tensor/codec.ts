// Wire forms: tensor metadata as msgpack, string tensors as length-prefixed UTF-8.
import { Packr } from 'msgpackr';
import { RvmaError } from '../mailbox/errors';
import { DType, isDType } from './dtypes';
import { Tensor, elementCount, tensorBytes } from './tensor';

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
  return packr.unpack(bytes);
}

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
    typeof m.isDead === 'boolean' &&
    Number.isSafeInteger(m.byteSize) &&
    m.byteSize >= 0 &&
    m.byteSize <= MAX_CONTENT_BYTES;
  if (!ok) throw new RvmaError('ERR_RVMA_PROTOCOL', 'malformed tensor meta from peer');
  return { dtype: m.dtype, shape: [...m.shape], isDead: m.isDead, byteSize: m.byteSize };
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
  return out;
}

export function metaOf(t: Tensor, isDead: boolean, content: Uint8Array): TensorMeta {
  return { dtype: t.dtype, shape: [...t.shape], isDead, byteSize: isDead ? 0 : content.byteLength };
}
