// Native memory for the application's own buffers (what mailbox.post(size) and
// registerRegion(size) allocate): the memory that large puts are fastest from.
import { native } from '../native';
import { checkInteger } from './validate';

/**
 * Zeroed, page-aligned native memory of `size` bytes, back to the buffer pool when the array is
 * collected. From 2 MiB on it starts on a 2 MiB boundary and is backed by transparent huge pages
 * where the kernel allows (THP "madvise" or "always"): a large put from it is copied faster than
 * from an ordinary Buffer (over shm the receiver pulls a 16 MiB put from it at about 1.8x the
 * speed, measured by bench:shm). Use it for tensors or staging buffers that are put often.
 */
export function allocBuffer(size: number): Uint8Array {
  return new Uint8Array(native().allocBuffer(checkInteger('allocBuffer', 'size', size, 0, 2 ** 40)));
}

/**
 * @internal allocBuffer's memory without the zeroing, for a receive that overwrites it whole: it
 * may hold bytes of this process's earlier buffers.
 */
export function allocUnzeroed(size: number): Uint8Array {
  return new Uint8Array(native().allocBuffer(size, false));
}

/** What the buffer pool behind allocBuffer holds and did, for this process. */
export interface BufferPoolStats {
  /** Bytes of collected buffers held for reuse now. */
  pooledBytes: number;
  /** The most it holds (setBufferPoolLimit). */
  limitBytes: number;
  /** Buffers served from the pool. */
  reused: number;
  /** Buffers served with memory new from the system. */
  fresh: number;
  /** Buffers collected so far, their memory kept or freed (a finalizer may run a while after the collection). */
  returned: number;
}

export function bufferPoolStats(): BufferPoolStats {
  return native().bufferPool();
}

/**
 * The most memory the buffer pool holds for reuse (default 64 MiB); what it holds beyond is
 * freed now. 0 turns reuse off: collected buffers go back to the system at once.
 */
export function setBufferPoolLimit(bytes: number): void {
  native().bufferPool(checkInteger('setBufferPoolLimit', 'bytes', bytes, 0, 2 ** 50));
}
