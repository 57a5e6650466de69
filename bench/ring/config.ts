// What bench:ring measures on a 3-rank ring: LEAP's frame, the scenarios, the rings compared (table
// rows, the C TCP ring among them as the floor) and the targets.
import { type Scenario, type Variant } from '../common/protocol';

/** c: bench/c/ringbench.c, no Node rank processes (c-ring.ts runs it per measurement). */
export type RingTransport = 'rvma' | 'net' | 'c';

/** The ring's members: rank 0 sends and receives, ranks 1 and 2 forward. */
export const RANKS = 3;

/** LEAP's frame: an 8-byte header { pos: u32, flags: u32 } and dim float32 values. */
export const HEADER_BYTES = 8;
export const DIM = 4096;
export const DATA_BYTES = DIM * 4;
export const FRAME_BYTES = HEADER_BYTES + DATA_BYTES;

/**
 * Frames in flight around the ring at most in the pipelined scenario, the same for every ring (rvma
 * runs on Ring.join's default slots; its sends beyond the credits wait in sendNext).
 */
export const RING_WINDOW = 64;

export const REPETITIONS = 5;

/** The work of each rank on each frame in the hop-work scenario. */
export const WORK_US = 1000;

/** A RESIZE_CHAIN of 32 layers over the 3 ranks. */
export const RESIZE_CHAIN = {
  type: 'RESIZE_CHAIN' as const,
  ranges: [
    { start: 0, end: 11 },
    { start: 11, end: 22 },
    { start: 22, end: 32 },
  ],
};

/**
 * hop: one frame around the ring at a time (decode); its per-op time is a round trip / 3.
 * frames: frames pipelined (prefill), counted when back at rank 0. around: ring.around().
 */
export function scenarios(quick: boolean, iterations: number | undefined): Scenario[] {
  const n = iterations ?? (quick ? 500 : 2000);
  return [
    { id: 'hop', label: 'hop', kind: 'rtt', size: FRAME_BYTES, window: 1, count: n, warmup: Math.max(50, n >> 3) },
    // Decode as a pipeline runs it: each rank works on the frame before passing it on, and the
    // others sleep meanwhile, so each hop wakes a rank that slept through another's work.
    { id: 'hop-work', label: 'hop after work', kind: 'rtt', size: FRAME_BYTES, window: 1, count: n >> 3, warmup: Math.max(20, n >> 6), workUs: WORK_US },
    { id: 'frames', label: 'frames/s', kind: 'bw', size: FRAME_BYTES, window: RING_WINDOW, count: 5 * n, warmup: Math.max(200, n >> 1) },
    { id: 'around', label: 'around()', kind: 'rtt', size: 0, window: 1, count: n >> 1, warmup: Math.max(25, n >> 4) },
  ];
}

export const TRANSPORTS: Variant<RingTransport>[] = [
  { id: 'c-tcp', label: 'C TCP ring (LEAP-style: writev, TCP_NODELAY, blocking reads)', transport: 'c', only: ['hop', 'frames'] },
  { id: 'net', label: 'net.Socket ring (LEAP-style)', transport: 'net', only: ['hop', 'hop-work', 'frames'] },
  { id: 'rvma-tcp', label: 'rvma ring, tcp (loop)', transport: 'rvma', provider: 'tcp', progress: 'loop' },
  { id: 'rvma-shm', label: 'rvma ring, shm (loop)', transport: 'rvma', provider: 'shm', progress: 'loop' },
  { id: 'rvma-tcp-thread', label: 'rvma ring, tcp (thread)', transport: 'rvma', provider: 'tcp', progress: 'thread' },
  { id: 'rvma-shm-thread', label: 'rvma ring, shm (thread)', transport: 'rvma', provider: 'shm', progress: 'thread' },
  // A rank waits about two hops between frames: a 1 ms window polls through that and a scheduler hiccup.
  { id: 'rvma-shm-busy', label: 'rvma ring, shm (loop, busy poll 1 ms)', transport: 'rvma', provider: 'shm', progress: 'loop', shm: { busyPollUs: 1000 } },
];

/**
 * The rings whose ratios are judged (the defaults: loop progress, no busy polling); the same ring
 * under thread progress and with busy polling (which keeps a CPU busy while waiting) is shown next
 * to them for information.
 */
export const SUBJECTS: { id: string; others: Record<'thread' | 'busy', string | undefined> }[] = [
  { id: 'rvma-tcp', others: { thread: 'rvma-tcp-thread', busy: undefined } },
  { id: 'rvma-shm', others: { thread: 'rvma-shm-thread', busy: 'rvma-shm-busy' } },
];

/** What each rvma ring is judged against (ratios of medians at one placement). */
export interface RingTargets {
  /** Hop latency over the net.Socket ring's, at most. */
  hopVersusNet: number;
  /** Hop latency over the C TCP ring's, at most. */
  hopVersusCRing: number;
  /** Frames/s over the net.Socket ring's, at least. */
  framesVersusNet: number;
}

export const TARGETS = {
  byRing: {
    'rvma-shm': { hopVersusNet: 0.6, hopVersusCRing: 0.8, framesVersusNet: 2.5 },
    'rvma-tcp': { hopVersusNet: 1.0, hopVersusCRing: 1.4, framesVersusNet: 1.3 },
  } as Record<string, RingTargets>,
  /** around() of a RESIZE_CHAIN, in hop latencies of the same ring, at most. */
  aroundInHops: 3,
  /** CPU per frame of all ranks (stop and wait, and pipelined) over the net.Socket ring's, at most. */
  cpuVersusNet: 0.6,
};

