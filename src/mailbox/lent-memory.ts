// Memory that peers write into while the application holds it (posted buffers, regions) must
// stay where it is until it is given back: a transferred or shrunk ArrayBuffer would leave
// the native side writing memory that is gone.
import { markAsUntransferable } from 'node:worker_threads';
import { invalid } from '../base/validate';

/**
 * Checks that `bytes` can be lent to peers, and keeps it from being transferred away from now
 * on (postMessage and structuredClone then copy it on Node 20, and throw a DataCloneError on
 * later versions): a posted buffer transferred to another thread or a clone would be freed
 * with it while peers still write into it.
 */
export function lend(call: string, name: string, bytes: Uint8Array): Uint8Array {
  const buffer = bytes.buffer as ArrayBufferLike & { resizable?: boolean };
  // Shrinking a resizable ArrayBuffer takes its pages away; growing a SharedArrayBuffer does not.
  if (buffer.resizable === true) {
    throw invalid(call, `${name} is a view of a resizable ArrayBuffer, which may shrink under the peers' writes`);
  }
  if (!(typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer)) markAsUntransferable(buffer);
  return bytes;
}
