// The verbs provider's options (Endpoint.create's `verbs` group): types, limits, checks.
import { checkInteger, checkOptions, invalid } from '../base/validate';

export interface VerbsOptions {
  /**
   * Landing-ring slots per connection (1..1024): puts and raw writes in flight per peer (the
   * smaller value of the two sides counts). Default 64.
   */
  slots?: number;
  /**
   * Bytes per slot (64..16 MiB). Puts up to slotBytes - 32 bytes (the smaller value of the two
   * sides) travel eagerly; larger ones are read by the receiver (RDMA read). Default 16 KiB.
   */
  slotBytes?: number;
  /**
   * Receive buffers of the endpoint's shared receive queue (8..65536, at most what the device
   * allows): every connection's incoming messages and eager puts take one until the endpoint
   * has handled them. receiveDepth x 512 bytes are registered once per endpoint, whatever the
   * number of peers. When many peers send at once and the queue runs dry, their devices retry
   * until a buffer is free again: nothing is lost. Default 4096.
   */
  receiveDepth?: number;
  /** Largest put a peer may send us; larger ones are refused with ERR_RVMA_TOO_LARGE. Default 4 GiB. */
  maxPutBytes?: number;
  /** A peer not heard from this long is pinged. Default 1000 ms. */
  keepaliveMs?: number;
  /** A peer silent for longer is lost: its pending puts reject with ERR_RVMA_PEER_LOST. Default 5000 ms. */
  peerTimeoutMs?: number;
  /** Connection setup (rdma_cm plus the hellos) limit. Default 5000 ms. */
  connectTimeoutMs?: number;
  /**
   * Bytes of memory registrations kept after use, so that the next large put, read or raw write
   * from the same buffer needs none (0: none kept). They go when their buffer is collected, or
   * least recently used first. Default 256 MiB.
   */
  registrationCacheBytes?: number;
  /**
   * With progress 'thread': after handling anything, the progress thread keeps polling the
   * completion queue for this many more microseconds before it sleeps, so that a message
   * following soon needs no wake-up; a CPU stays busy meanwhile (0..100000). Default 0: never.
   */
  busyPollUs?: number;
}

const MAX_MS = 2 ** 31 - 1;
// [min, max] per key. The hello refuses more than 4096 slots or slots over 16 MiB; 1024 slots
// keep a few connections per completion queue.
const LIMITS: Record<keyof VerbsOptions, [number, number]> = {
  slots: [1, 1024],
  slotBytes: [64, 1 << 24],
  receiveDepth: [8, 65536],
  maxPutBytes: [1, Number.MAX_SAFE_INTEGER],
  keepaliveMs: [1, MAX_MS],
  peerTimeoutMs: [1, MAX_MS],
  connectTimeoutMs: [1, MAX_MS],
  registrationCacheBytes: [0, Number.MAX_SAFE_INTEGER],
  busyPollUs: [0, 100_000],
};
const KEYS = Object.keys(LIMITS) as (keyof VerbsOptions)[];

/** Checks the `verbs` group of Endpoint.create's options (defaults stay native). */
export function parseVerbsOptions(call: string, options: unknown): VerbsOptions {
  const o = checkOptions<VerbsOptions>(`${call} verbs`, options, KEYS);
  for (const key of KEYS) {
    if (o[key] !== undefined) checkInteger(call, `verbs.${key}`, o[key], ...LIMITS[key]);
  }
  if ((o.keepaliveMs ?? 1000) >= (o.peerTimeoutMs ?? 5000)) {
    throw invalid(call, 'verbs.keepaliveMs must be smaller than verbs.peerTimeoutMs');
  }
  return o;
}
