// The soak's settings: what the command line gives (run.ts) and the fixed timings every part
// agrees on, in one place.
import type { Transport } from './protocol';

export interface SoakOptions {
  minutes: number;
  seed: number;
  processes: number;
  /** Puts per second from each sender to each sink. */
  rate: number;
  /** Open-files limit (soft and hard) of every endpoint process. */
  nofile: number;
  /** A process whose RSS passes this is a finding (and is restarted, to protect the host). */
  rssLimitMiB: number;
  /** A role that makes no progress for this long (while not stopped on purpose) is hung. */
  hangSeconds: number;
  ringTransport: Transport;
  /** The fault kinds to inject (default: all of faults.ts FAULT_KINDS). */
  faults: string[];
  /** Where the JSON summary goes. */
  out: string;
}

export const TIMING = {
  /** The endpoints' tcp defaults (docs/api.md TcpOptions): a stop longer than peerTimeoutMs loses the peer. */
  peerTimeoutMs: 5000,
  connectTimeoutMs: 5000,
  stopLongMs: 7000,
  stopShortMs: 1500,
  putTimeoutMs: 10_000,
  recvTimeoutMs: 15_000,
  /** No faults before this (the first-minute baselines need some quiet too). */
  warmupMs: (minutes: number) => Math.min(15_000, minutes * 60_000 * 0.15),
  /** No faults in the last part of the run, so the roles settle before the final checks. */
  cooldownMs: (minutes: number) => Math.max(10_000, minutes * 60_000 * 0.12),
  faultGapMs: [2000, 5000] as const,
  /** How long each hostile client attacks; never-reading long enough to outlast peerTimeoutMs once the victim stops reading. */
  hostileMs: { slowloris: 9000, 'never-reading': 14_000, 'connection-flood': 9000, 'tensor-request-flood': 9000 },
  sampleMs: 2000,
  checkEveryMs: 60_000,
  startTimeoutMs: 60_000,
  stopTimeoutMs: 30_000,
  /** The hard deadline: the run's minutes plus this. */
  graceMs: 150_000,
  /** RSS growth finding: second half's max above first minute's max by this factor and this many MiB. */
  growthFactor: 1.5,
  // As much as a hostile attack may leave behind (hostileRetainedMiB): with less, memory an
  // allocator or V8 kept after one flood, judged already, was found again as growth.
  growthMinMiB: 64,
  /** fd growth finding: the quiet end count above the first minute's max by this many. */
  fdSlack: 32,
  /** ... and, at the minute checks, any sample above it by this many (away from hostile clients). */
  fdGrossSlack: 256,
  /**
   * Hostile impact findings: RSS up by this much at the peak, or still up by as much 4 s after
   * the attack. An allocator or V8 may keep what a burst made them take (the heap-after-GC check
   * below tells objects left behind); memory kept again by every attack shows as growth over the run.
   */
  hostileRssMiB: 64,
  hostileRetainedMiB: 64,
  /** ... or its heap after a full collection grew by this much (objects the attack left behind). */
  hostileHeapMiB: 8,
  /** A victim of a connection-level attack using more of a CPU than this is spinning. */
  hostileCpuShare: 0.7,
};
