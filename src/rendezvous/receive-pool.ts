// Receive memory: released buffers reused by size, fresh memory, tensors over received bytes.
// A buffer comes back by Received.release, or at its step's cleanup with recycle.
import { allocUnzeroed } from '../mailbox/alloc';
import { type TensorMeta, decodeStrings } from '../tensor/codec';
import { viewAs } from '../tensor/dtypes';
import { type Tensor } from '../tensor/tensor';

/** Tensors smaller than this land in an ordinary array, larger ones in native page-aligned memory. */
const SMALL_TENSOR_BYTES = 4096;

export class ReceivePool {
  /** Released receive buffers by size, for the next recv of that size. */
  private readonly bySize = new Map<number, Uint8Array[]>();
  private pooledBytes = 0;
  /** With recycle: the release() of each remote recv's tensor by step, run at the step's cleanup. */
  private readonly recycling = new Map<bigint, (() => void)[]>();
  private closed = false;

  /** `limitBytes`: receivePoolBytes. */
  constructor(private readonly limitBytes: number) {}

  /** A buffer of `size` bytes: a released one if one fits, else fresh memory. */
  take(size: number): Uint8Array {
    const buffer = this.bySize.get(size)?.pop();
    if (!buffer) return freshBuffer(size);
    this.pooledBytes -= size;
    return buffer;
  }

  /** Received.release of a tensor over buffer: gives it back to the pool once. */
  releaser(buffer: Uint8Array): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.giveBack(buffer);
    };
  }

  giveBack(buffer: Uint8Array): void {
    const size = buffer.byteLength;
    if (this.closed || size === 0 || this.pooledBytes + size > this.limitBytes) return;
    let free = this.bySize.get(size);
    if (!free) this.bySize.set(size, (free = []));
    free.push(buffer);
    this.pooledBytes += size;
  }

  /** Runs release when the step is cleaned up (see recycle); nothing once the pool closed. */
  releaseAtCleanup(step: bigint, release: () => void): void {
    if (this.closed) return;
    let releases = this.recycling.get(step);
    if (!releases) this.recycling.set(step, (releases = []));
    releases.push(release);
  }

  /** The step was cleaned up: the buffers of its recycled tensors come back. */
  stepCleaned(step: bigint): void {
    const releases = this.recycling.get(step);
    if (!releases) return;
    this.recycling.delete(step);
    for (const release of releases) release();
  }

  /** Bytes of released receive buffers held for reuse (at most limitBytes). */
  get bytes(): number {
    return this.pooledBytes;
  }

  /** Drops every buffer held; none is kept from now on. */
  close(): void {
    this.closed = true;
    this.bySize.clear();
    this.pooledBytes = 0;
    this.recycling.clear();
  }
}

/**
 * Memory for a tensor no released buffer fits. Below a page an ordinary array: native page-aligned
 * memory would cost a page and a finalizer for a few bytes. Above, from the buffer pool, not
 * zeroed: the content overwrites it (fewer bytes fail the recv). Bytes a sender skipped with
 * overlapping puts would show this process's own earlier data, to this process only.
 */
function freshBuffer(size: number): Uint8Array {
  return size < SMALL_TENSOR_BYTES ? new Uint8Array(size) : allocUnzeroed(size);
}

/** The tensor over received bytes (no copy); strings are decoded. */
export function tensorOf(meta: TensorMeta, bytes: Uint8Array): Tensor {
  if (meta.dtype === 'string') return { dtype: 'string', shape: meta.shape, data: meta.isDead ? [] : decodeStrings(meta.shape, bytes) };
  return { dtype: meta.dtype, shape: meta.shape, data: viewAs(meta.dtype, bytes) };
}
