// What bench:rendezvous measures: the step scenarios (K tensors out, one ack back), the two
// ways of moving them (rendezvous, and plain puts as the baseline), the placements and targets.
import { type PlacementMode } from '../common/placement';
import { type Scenario, type Target, type Variant } from '../common/protocol';

/**
 * 'rendezvous-recycle': the same steps, every recv with `recycle` (buffers back to the receive pool
 * at their step's cleanup: no release()); 'rendezvous-release': every received tensor's release()
 * once checked.
 */
export type Transport = 'rendezvous' | 'rendezvous-recycle' | 'rendezvous-release' | 'put';

/** A scenario as the children run it: K tensors of `size` bytes per step, then an ack back. */
export interface StepScenario extends Scenario {
  transport: Transport;
  /** Tensors per step (K). */
  tensors: number;
  /** Bytes of the answer per step: 8 (2 float32) for the ping-pong, 4 (1 float32) otherwise. */
  ackBytes: number;
}

/** What the consumer hands the producer for one measurement. */
export interface StepTarget extends Target {
  /** The first step id of this measurement (steps never repeat within a manager's life). */
  firstStep: string;
}

/** A transport at one placement: one table row. */
export interface PlacedVariant extends Variant<Transport> {
  placement: PlacementMode;
}

export const REPETITIONS = 5;
export const PLACEMENTS: PlacementMode[] = ['same', 'split'];

/** The tasks of the two processes (the endpoints' labels). */
export const PRODUCER_TASK = '/job:worker/replica:0/task:0';
export const CONSUMER_TASK = '/job:worker/replica:0/task:1';
export const device = (task: string): string => `${task}/device:CPU:0`;

/** recv's timeout, as an application would pass one. */
export const RECV_TIMEOUT_MS = 10_000;

const KiB = 1 << 10;
const MiB = 1 << 20;

/** size: bytes per tensor; count/warmup: steps (quick runs take a quarter). */
export function scenarios(quick: boolean): Omit<StepScenario, 'transport'>[] {
  const n = (steps: number): number => (quick ? Math.max(16, steps >> 2) : steps);
  return [
    { id: 'ping', label: 'ping-pong 8 B', kind: 'rtt', size: 8, window: 1, tensors: 1, ackBytes: 8, count: n(4000), warmup: n(400) },
    { id: 'bw64k', label: '4 x 64 KiB', kind: 'bw', size: 64 * KiB, window: 4, tensors: 4, ackBytes: 4, count: n(2000), warmup: n(200) },
    { id: 'bw1m', label: '4 x 1 MiB', kind: 'bw', size: MiB, window: 4, tensors: 4, ackBytes: 4, count: n(256), warmup: n(32) },
    { id: 'bw16m', label: '2 x 16 MiB', kind: 'bw', size: 16 * MiB, window: 2, tensors: 2, ackBytes: 4, count: n(32), warmup: n(8) },
  ];
}

export const TRANSPORTS: { id: Transport; label: string }[] = [
  { id: 'put', label: 'endpoint.put (baseline)' },
  { id: 'rendezvous', label: 'rendezvous send/recv (info)' },
  { id: 'rendezvous-recycle', label: 'rendezvous, recycled at cleanup (recv option)' },
  { id: 'rendezvous-release', label: 'rendezvous, release() after use (info)' },
];

export const placedId = (transport: Transport, placement: PlacementMode): string => `${transport}@${placement}`;

/**
 * Rendezvous (recycled at cleanup: a step loop that never calls release()) over put at the same
 * placement: time ratio (at most) for the ping-pong, bandwidth ratio (at least) otherwise.
 */
export const TARGETS: { scenario: string; min?: number; max?: number }[] = [
  { scenario: 'ping', max: 2 },
  { scenario: 'bw64k', min: 0.8 },
  { scenario: 'bw1m', min: 0.8 },
  { scenario: 'bw16m', min: 0.8 },
];
