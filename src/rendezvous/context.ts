// What the receiver, sender and push halves share of their manager, as one interface.
import type { Endpoint } from '../mailbox/endpoint';
import type { ControlChannel } from './control';
import type { RendezvousCounters } from './counters';
import type { ManagerOptions } from './options';
import type { ReceivePool } from './receive-pool';
import type { Steps } from './steps';

export interface ManagerContext {
  readonly endpoint: Endpoint;
  /** Tasks this endpoint hosts. */
  readonly tasks: ReadonlySet<string>;
  readonly options: ManagerOptions;
  readonly counters: RendezvousCounters;
  readonly channel: ControlChannel;
  readonly steps: Steps;
  readonly pool: ReceivePool;
  /** The manager closed: nothing is posted or pushed any more. */
  closed(): boolean;
  /** The fields naming this node in every control message it sends. */
  from(): { from: string; fromIncarnation: string };
}

/** A recv of a key in a step, as a receiver tracks it (one at a time). */
export function recvId(stepId: bigint | string, key: string): string {
  return `${stepId};${key}`;
}
