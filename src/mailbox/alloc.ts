// Native memory for the application's own buffers (what mailbox.post(size) and
// registerRegion(size) allocate): the memory that large puts are fastest from.
import { native } from '../native';
import { checkInteger } from '../base/validate';

/**
 * Zeroed, page-aligned native memory of `size` bytes, back to the buffer pool when the array is
 * collected. From 64 KiB on it comes from the process's shared arena (setArenaLimit): a peer on
 * the same host copies a put from it with one memcpy instead of pulling it through the kernel
 * (bench:shm). From 2 MiB on it starts on a 2 MiB boundary, with huge pages where the kernel
 * allows, and is in the arena only where shared memory gets huge pages. Use it for tensors or
 * staging buffers that are put often.
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
  /** Bytes of the shared arena in buffers now (handed out, or held by the pool for reuse). */
  arenaBytes: number;
  /** The most the arena hands out (setArenaLimit); larger buffers come from ordinary memory. */
  arenaLimitBytes: number;
}

export function bufferPoolStats(): BufferPoolStats {
  const arena = native().arena();
  return { ...native().bufferPool(), arenaBytes: arena.usedBytes, arenaLimitBytes: arena.limitBytes };
}

/**
 * The most of the shared arena that buffers of 64 KiB and more (see allocBuffer) take at once (default and most:
 * 16 GiB, the arena's size). Past it, allocBuffer hands out ordinary memory, which a same-host
 * peer pulls through the kernel. 0 keeps every new buffer out of the arena. Buffers already
 * out stay where they are.
 */
export function setArenaLimit(bytes: number): void {
  native().arena(checkInteger('setArenaLimit', 'bytes', bytes, 0, 2 ** 50));
}

/**
 * The most memory the buffer pool holds for reuse (default 64 MiB); what it holds beyond is
 * freed now. 0 turns reuse off: collected buffers go back to the system at once.
 */
export function setBufferPoolLimit(bytes: number): void {
  native().bufferPool(checkInteger('setBufferPoolLimit', 'bytes', bytes, 0, 2 ** 50));
}
