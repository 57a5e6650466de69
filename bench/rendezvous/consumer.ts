// The consumer process (task 1) of one measurement: prepare opens what the producer will need
// and starts the steps in the background; finish waits for them and reports what it saw.
import { type Mailbox } from '../../src';
import { type Received } from '../common/protocol';
import { PRODUCER_TASK, type StepScenario, type StepTarget } from './config';
import { type Peer } from './peer';
import * as put from './put-steps';
import * as rendezvous from './rendezvous-steps';
import { type StepsDone, driveSteps } from './steps';

/** What the consumer saw in one measurement. */
export interface ConsumerReceived extends Received {
  /** Minor page faults over the timed steps. */
  faults: number;
}

export class Consumer {
  private nextStep = 1;
  private running: Promise<StepsDone> | undefined;

  constructor(private readonly peer: Peer) {}

  get address(): string {
    return this.peer.endpoint.address;
  }

  prepare(s: StepScenario): StepTarget {
    const firstStep = this.nextStep;
    this.nextStep += s.warmup + s.count;
    // The baseline's mailbox is open before the producer's first put.
    const data = s.transport === 'put' ? put.inbox(this.peer.endpoint, put.dataVaddr(firstStep), s.size, s.tensors + 2) : undefined;
    this.running = this.steps(s, firstStep, data);
    this.running.catch(() => undefined); // reported by finish
    return { firstStep: String(firstStep), vaddrs: data ? [data.vaddr.toString()] : [] };
  }

  async finish(): Promise<ConsumerReceived> {
    const done = await this.running!;
    return { count: done.ops, bytes: done.bytes, faults: done.faults };
  }

  close(): Promise<void> {
    return this.peer.close();
  }

  private async steps(s: StepScenario, firstStep: number, data: Mailbox | undefined): Promise<StepsDone> {
    const producer = await this.peer.other(PRODUCER_TASK);
    try {
      if (data) return await driveSteps(s, firstStep, put.consumerStep(this.peer.endpoint, producer.nodeId, s, data, put.ackVaddr(firstStep)));
      const keys = rendezvous.keysFor(s, producer.incarnation, this.peer.endpoint.incarnation);
      return await driveSteps(s, firstStep, rendezvous.consumerStep(this.peer, s, keys, rendezvous.reuseOf(s.transport)));
    } finally {
      data?.close();
    }
  }
}
