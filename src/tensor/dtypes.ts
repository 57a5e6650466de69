// The dtypes a tensor may have, their element sizes and the TypedArray that views them.

export type DType =
  | 'float16'
  | 'bfloat16'
  | 'float32'
  | 'float64'
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'uint8'
  | 'uint16'
  | 'uint32'
  | 'uint64'
  | 'bool'
  | 'string';

export type NumericArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

type ArrayCtor = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): NumericArray; BYTES_PER_ELEMENT: number };

/** Element view per dtype. float16/bfloat16 travel as raw 16-bit words; bool as one byte. */
const VIEWS: Record<Exclude<DType, 'string'>, ArrayCtor> = {
  float16: Uint16Array,
  bfloat16: Uint16Array,
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
};

export const DTYPES: readonly DType[] = [...(Object.keys(VIEWS) as DType[]), 'string'];

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && (DTYPES as readonly string[]).includes(value);
}

/** Bytes per element (0 for string: its size depends on the values). */
export function elementSize(dtype: DType): number {
  return dtype === 'string' ? 0 : VIEWS[dtype].BYTES_PER_ELEMENT;
}

/** A view of bytes as dtype's TypedArray, without copying (bytes must be aligned). */
export function viewAs(dtype: Exclude<DType, 'string'>, bytes: Uint8Array): NumericArray {
  const ctor = VIEWS[dtype];
  return new ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / ctor.BYTES_PER_ELEMENT);
}
