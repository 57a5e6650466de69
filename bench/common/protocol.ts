// What an orchestrator (run.ts) and its children (child.ts) say to each other over IPC, and
// the shapes of scenarios, variants and measurements every benchmark shares.
import type { ProgressMode, ShmOptions, VerbsOptions } from '../../src';

/** One row of a result table: a transport and how it is configured. */
export interface Variant<T extends string = string> {
  id: string;
  label: string;
  transport: T;
  progress?: ProgressMode;
  stripes?: number;
  /** verbs: provider options (a larger eager limit, no registration cache). */
  verbs?: VerbsOptions;
  /** shm: provider options (busy polling). */
  shm?: ShmOptions;
  /** The provider, where one benchmark compares several (bench:shm: shm and tcp). */
  provider?: 'shm' | 'tcp';
  /** An external tool's extra command-line arguments (e.g. ucx_perftest's wait mode). */
  args?: string[];
  /**
   * Where the sender's data lives: 'buffer' (default) a plain Node Buffer; 'native' the
   * library's allocBuffer() (huge pages from 2 MiB on). memcpy: its source likewise.
   */
  source?: 'buffer' | 'native';
  /**
   * memcpy: copy as the mailbox rows do, from window-many sources into as many destinations as
   * their receiver posts, in turn (else between one pair of buffers, which may stay in cache).
   */
  rotate?: boolean;
  /** Scenario ids this variant runs (all when absent). */
  only?: string[];
}

export interface Scenario {
  id: string;
  label: string;
  /** rtt: one put at a time, per-op times. bw: `window` puts in flight, bytes over time. */
  kind: 'rtt' | 'bw';
  size: number;
  window: number;
  /** Timed operations. */
  count: number;
  /** Untimed operations before them, on the same connection. */
  warmup: number;
  /** Ring only: µs every rank spends busy on each frame before it passes it on (a layer computing). */
  workUs?: number;
  /** Made by --sizes from this scenario (bench/common/knobs.ts): the rows that run it run this one. */
  template?: string;
}

/** What a receiver hands the sender for one scenario (bigints travel as decimal strings). */
export interface Target {
  vaddrs?: string[];
  key?: string;
}

export interface Measurement {
  ops: number;
  bytes: number;
  elapsedNs: number;
  /** rtt only */
  medianOpNs?: number;
  p99OpNs?: number;
  /** CPU time (all threads, user + system) each side spent on warm-up and timed ops */
  senderCpuNs?: number;
  receiverCpuNs?: number;
  /** Voluntary context switches (all threads: each a sleep and a wake-up) over the same span */
  senderWakeups?: number;
  receiverWakeups?: number;
  /** An external tool's own figures, kept for the record when the others are derived from them. */
  reported?: Record<string, number>;
}

/** What a receiver counted since prepare. */
export interface Received {
  count: number;
  bytes: number;
  /** CPU time since prepare (filled in by the child) */
  cpuNs?: number;
  /** Voluntary context switches since prepare (filled in by the child) */
  wakeups?: number;
}

export type Request =
  | { id: number; cmd: 'prepare'; scenario: Scenario }
  | { id: number; cmd: 'run'; scenario: Scenario; target: Target }
  | { id: number; cmd: 'finish'; expected: number }
  | { id: number; cmd: 'exit' };

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** A child's first message: it is listening (receiver) or connected (sender). */
export interface Hello {
  ready: true;
  address: string;
}

/** Receivers address mailbox vaddrs from here up (above the library's reserved range). */
export const FIRST_VADDR = 0x100000n;
