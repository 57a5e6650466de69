// What a put carries: one run of bytes, or a gathered [head, data] pair that the native put
// sends as one payload without joining them in JavaScript.
import { checkBytes, invalid } from '../base/validate';

type Bytes = ArrayBufferView | ArrayBuffer;

/** A put's payload: bytes, or `[head, data]`, placed as head's bytes followed by data's. */
export type PutData = Bytes | readonly [Bytes, Bytes];

/** [head or undefined, data]; throws ERR_RVMA_INVALID_ARGUMENT for anything else. */
export function checkPutData(call: string, value: unknown): [Uint8Array | undefined, Uint8Array] {
  if (!Array.isArray(value)) return [undefined, checkBytes(call, 'data', value)];
  if (value.length !== 2) throw invalid(call, `a gathered put is [head, data], got an array of ${value.length} items`);
  const head = checkBytes(call, 'data[0]', value[0]);
  return [head.byteLength ? head : undefined, checkBytes(call, 'data[1]', value[1])];
}
