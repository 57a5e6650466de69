// The small counted puts of one turn, gathered in JS and handed to the native side in one call at
// the end of the turn (or when full): a typed array of descriptors and one arena holding their
// payloads, copied there at the call. A put costs a few typed-array writes instead of a native
// call with a dozen arguments to convert.
import type { NativeEndpoint } from '../native';
import type { NativeRoutes } from './native-routes';
import type { PutDescriptor } from './put-descriptor';
import type { Route } from './resolver';

const WORDS = 8; // putId, route, vaddr high, vaddr low, offset, flags, payload start, length (native PutQueued)
const ENTRIES = 1024;
const ARENA_BYTES = 256 << 10;

export class PutQueue {
  private readonly entries = new Float64Array(ENTRIES * WORDS);
  private readonly arena = new Uint8Array(ARENA_BYTES);
  private count = 0;
  private used = 0;
  private lastVaddr = -1n;
  private vaddrHigh = 0;
  private vaddrLow = 0;

  constructor(
    private readonly handle: NativeEndpoint,
    private readonly routes: NativeRoutes,
  ) {}

  /** The largest payload the queue takes; larger puts go to the native side one by one. */
  static readonly MAX_BYTES = 4096;

  get size(): number {
    return this.count;
  }

  /**
   * Queues a put of at most MAX_BYTES (offset below 2^53); the caller flushes at the end of the
   * turn. len: the payload's bytes, head's and data's.
   */
  add(put: PutDescriptor, route: Route, vaddr: bigint, len: number): void {
    const { head, data } = put;
    if (this.count === ENTRIES || this.used + len > ARENA_BYTES) this.flush();
    if (vaddr !== this.lastVaddr) {
      this.lastVaddr = vaddr;
      this.vaddrHigh = Number(vaddr >> 32n);
      this.vaddrLow = Number(vaddr & 0xffffffffn);
    }
    const at = this.used;
    if (head) {
      this.arena.set(head, at);
      this.arena.set(data, at + head.byteLength);
    } else if (len <= 16) {
      for (let i = 0; i < len; i++) this.arena[at + i] = data[i]; // cheaper than set() for a few bytes
    } else {
      this.arena.set(data, at);
    }
    this.used += len;
    const e = this.entries;
    const w = this.count++ * WORDS;
    e[w] = put.id;
    e[w + 1] = this.routes.indexOf(route);
    e[w + 2] = this.vaddrHigh;
    e[w + 3] = this.vaddrLow;
    e[w + 4] = put.offset === 0n ? 0 : Number(put.offset);
    e[w + 5] = put.flags;
    e[w + 6] = at;
    e[w + 7] = len;
  }

  /** Hands what is queued to the native side, which sends it at once. */
  flush(): void {
    if (this.count === 0) return;
    const count = this.count;
    this.count = this.used = 0;
    this.handle.putQueued(this.entries, count, this.arena);
  }

  /** Drops what is queued (the endpoint closed: those puts are lost, and counted so). */
  clear(): void {
    this.count = this.used = 0;
  }
}

const SAFE_OFFSET = 2n ** 53n;

/** Whether a counted put can go through the queue: small, and an offset a double holds exactly. */
export function queueable(bytes: number, offset: bigint): boolean {
  return bytes <= PutQueue.MAX_BYTES && (offset === 0n || offset < SAFE_OFFSET);
}
