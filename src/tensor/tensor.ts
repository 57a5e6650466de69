// A tensor as the rendezvous moves it: dtype, shape, data. Accepts plain TypedArrays and
// objects shaped like tfjs or onnxruntime tensors, without copying where the layout allows.
import { invalid } from '../base/validate';
import { type DType, type NumericArray, elementSize, isDType, viewAs } from './dtypes';

export interface Tensor {
  dtype: DType;
  shape: number[];
  /** A TypedArray (or Buffer) for numeric dtypes, string[] for 'string'. */
  data: NumericArray | Uint8Array | string[];
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

/**
 * Normalizes what a caller hands over: { dtype, shape, data } as is; onnxruntime-like
 * { type, dims, data }; tfjs-like { dtype, shape, dataSync() } (dataSync copies, tfjs's way).
 */
export function toTensor(call: string, value: unknown): Tensor {
  if (value === null || typeof value !== 'object') throw invalid(call, 'tensor must be an object');
  const v = value as Record<string, unknown>;
  const dtype = (v.dtype ?? v.type) as unknown;
  const shape = (v.shape ?? v.dims) as unknown;
  let data = v.data as unknown;
  // A tfjs Tensor has an async data() method and a synchronous dataSync().
  if ((data === undefined || typeof data === 'function') && typeof v.dataSync === 'function') {
    data = (v.dataSync as () => unknown)();
  }
  if (!isDType(dtype)) throw invalid(call, `tensor dtype ${JSON.stringify(dtype)} is not supported`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw invalid(call, 'tensor shape must be an array of non-negative integers');
  }
  const count = elementCount(shape);
  if (dtype === 'string') {
    if (!Array.isArray(data) || !data.every((s) => typeof s === 'string') || data.length !== count) {
      throw invalid(call, `a string tensor needs data: string[] of ${count} elements`);
    }
    return { dtype, shape: [...shape], data };
  }
  if (!ArrayBuffer.isView(data) || data instanceof DataView) throw invalid(call, 'tensor data must be a TypedArray');
  if (data.byteLength !== count * elementSize(dtype)) {
    throw invalid(call, `tensor data holds ${data.byteLength} bytes; ${dtype}${JSON.stringify(shape)} needs ${count * elementSize(dtype)}`);
  }
  return { dtype, shape: [...shape], data: data as NumericArray };
}

/** The bytes of a numeric tensor, viewed in place. */
export function tensorBytes(t: Tensor): Uint8Array {
  const d = t.data as NumericArray;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

/** A numeric tensor over received bytes (no copy). */
export function tensorFromBytes(dtype: Exclude<DType, 'string'>, shape: number[], bytes: Uint8Array): Tensor {
  return { dtype, shape, data: viewAs(dtype, bytes) };
}
