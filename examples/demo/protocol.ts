// Messages between the demo's launcher and its workers (over the fork IPC channel).
import type { NodeRecord } from '../../src/directory';

export interface WorkerConfig {
  rank: number;
  workers: number;
  steps: number;
  tensorsPerStep: number;
  redisUrl?: string;
  cluster: string;
}

export type ToWorker =
  | { type: 'start'; config: WorkerConfig }
  | { type: 'peers'; records: NodeRecord[] }
  | { type: 'go' }
  | { type: 'stop' };

export interface WorkerStats {
  rank: number;
  tensors: number;
  bytes: number;
  mismatches: number;
  /** Recv latencies from step 2 on. */
  latenciesMs: number[];
  /** The slowest recv of step 1, which also connects the workers. */
  firstStepMs: number;
  counters: Record<string, number>;
  /** The worker's connections to other workers, by transport (endpoint.peers()). */
  transports: Record<string, number>;
}

export type FromWorker =
  | { type: 'ready'; record: NodeRecord }
  | { type: 'done'; stats: WorkerStats }
  | { type: 'failed'; message: string };

export function taskName(rank: number): string {
  return `/job:worker/replica:0/task:${rank}`;
}
