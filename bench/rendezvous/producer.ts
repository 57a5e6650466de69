// The producer process (task 0): runs one measurement's steps against the consumer and times them.
import { type Endpoint } from '../../src';
import { CONSUMER_TASK, type StepScenario, type StepTarget } from './config';
import { type Peer } from './peer';
import * as put from './put-steps';
import * as rendezvous from './rendezvous-steps';
import { type StepsDone, driveSteps } from './steps';

export class Producer {
  private constructor(
    private readonly peer: Peer,
    private readonly consumer: { nodeId: string; incarnation: string },
  ) {}

  /** The consumer is up (it started first): its record comes from the directory. */
  static async create(peer: Peer): Promise<Producer> {
    return new Producer(peer, await peer.other(CONSUMER_TASK));
  }

  get endpoint(): Endpoint {
    return this.peer.endpoint;
  }

  async run(s: StepScenario, t: StepTarget): Promise<StepsDone> {
    const firstStep = Number(t.firstStep);
    if (s.transport !== 'put') {
      const keys = rendezvous.keysFor(s, this.peer.endpoint.incarnation, this.consumer.incarnation);
      return driveSteps(s, firstStep, rendezvous.producerStep(this.peer, s, keys, rendezvous.reuseOf(s.transport)));
    }
    const answers = put.inbox(this.peer.endpoint, put.ackVaddr(firstStep), s.ackBytes, 2);
    try {
      const data = BigInt(t.vaddrs![0]);
      return await driveSteps(s, firstStep, put.producerStep(this.peer.endpoint, this.consumer.nodeId, s, data, answers));
    } finally {
      answers.close();
    }
  }

  close(): Promise<void> {
    return this.peer.close();
  }
}
