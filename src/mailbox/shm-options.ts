// The shm provider's options (Endpoint.create's `shm` group): types, limits, checks.
import { checkBoolean, checkInteger, checkOptions, invalid } from '../base/validate';

/** See ShmOptions.senderWrites. */
export type SenderWrites = 'never' | 'streaming' | 'always';

export interface ShmOptions {
  /**
   * Run the shared-memory provider (with provider 'auto' or 'shm'): accept same-host peers
   * on an abstract unix socket, published in the directory, and reach same-host peers
   * through it. Default true.
   */
  enabled?: boolean;
  /**
   * Let the receiver pull large puts straight from the sender's memory (process_vm_readv).
   * Where the kernel refuses it (another user, ptrace restrictions, a container without the
   * capability), or with false, large puts are copied through the shared ring in chunks.
   * See endpoint.peers(). Default true.
   */
  cma?: boolean;
  /**
   * Whether a large put from ordinary memory into a buffer this endpoint posted from the shared
   * arena (`allocBuffer`, `mailbox.post(size)`: see docs/api.md, "The shared arena") is copied
   * by its sender straight into that buffer, one memcpy, instead of pulled through the kernel:
   * this endpoint reserves the put's range and hands the sender its place in the arena, which
   * it shares with that peer. Only with a peer that may reach this process's memory anyway (as
   * for pulls), and from senderWritesMinBytes on. A sender's write costs one round trip more
   * than a pull: 'streaming' (default) asks for it only while more of the sender's records wait
   * behind the put (it streams, so the round trip overlaps them), so that a lone put's latency
   * stays a pull's; 'always' for every such put; 'never' pulls them all.
   */
  senderWrites?: SenderWrites;
  /**
   * The smallest put senderWrites applies to: a sender's write costs one round trip more than a
   * pull, which smaller puts do not win back where the processes run on different CPUs (see
   * docs/api.md). Default 512 KiB.
   */
  senderWritesMinBytes?: number;
  /** Bytes of each direction's shared ring per connection: a power of two, 64 KiB..256 MiB. Default 1 MiB. */
  ringBytes?: number;
  /** Puts up to this size travel inline through the ring; larger ones are pulled. At most ringBytes / 4. Default 64 KiB. */
  eagerMaxBytes?: number;
  /** Largest put a peer may send us; larger ones are refused with ERR_RVMA_TOO_LARGE. Default 4 GiB. */
  maxPutBytes?: number;
  /** Connection setup (the unix-socket handshake) limit. Default 5000 ms. */
  connectTimeoutMs?: number;
  /**
   * After handling anything, keep polling the rings this many more microseconds before
   * sleeping, so that a message following soon needs no wake-up; a CPU stays busy meanwhile
   * (0..100000). With progress 'loop' the event loop spins instead of blocking (JavaScript
   * keeps running: timers, I/O and promises go on as usual); with 'thread', the progress
   * thread. Default 0: never.
   */
  busyPollUs?: number;
}

const MAX_MS = 2 ** 31 - 1;
const SENDER_WRITES: unknown[] = ['never', 'streaming', 'always'];
const NUMBERS: Partial<Record<keyof ShmOptions, [number, number]>> = {
  ringBytes: [64 << 10, 256 << 20],
  eagerMaxBytes: [0, 64 << 20],
  maxPutBytes: [1, Number.MAX_SAFE_INTEGER],
  connectTimeoutMs: [1, MAX_MS],
  busyPollUs: [0, 100_000],
  senderWritesMinBytes: [0, Number.MAX_SAFE_INTEGER],
};
const KEYS: (keyof ShmOptions)[] = ['enabled', 'cma', 'senderWrites', ...(Object.keys(NUMBERS) as (keyof ShmOptions)[])];

/** Checks the `shm` group of Endpoint.create's options (defaults stay native). */
export function parseShmOptions(call: string, options: unknown): ShmOptions {
  const o = checkOptions<ShmOptions>(`${call} shm`, options, KEYS);
  if (o.enabled !== undefined) checkBoolean(call, 'shm.enabled', o.enabled);
  if (o.cma !== undefined) checkBoolean(call, 'shm.cma', o.cma);
  if (o.senderWrites !== undefined && !SENDER_WRITES.includes(o.senderWrites)) {
    throw invalid(call, `shm.senderWrites must be 'never', 'streaming' or 'always', got ${String(o.senderWrites)}`);
  }
  for (const [key, [min, max]] of Object.entries(NUMBERS) as [keyof ShmOptions, [number, number]][]) {
    if (o[key] !== undefined) checkInteger(call, `shm.${key}`, o[key], min, max);
  }
  const ring = o.ringBytes ?? 1 << 20;
  if ((ring & (ring - 1)) !== 0) throw invalid(call, `shm.ringBytes must be a power of two, got ${ring}`);
  if ((o.eagerMaxBytes ?? Math.min(64 << 10, ring / 4)) > ring / 4) {
    throw invalid(call, `shm.eagerMaxBytes must be at most shm.ringBytes / 4 (${ring / 4})`);
  }
  return o;
}
