// Orchestrator side of the two processes: the consumer forked first, then the producer (both
// on child.js), kept for the whole run, pinned per placement, driven one measurement at a time.
import { BenchChild } from '../common/child-process';
import { type Placement, pin } from '../common/placement';
import { type Measurement } from '../common/protocol';
import { type StepScenario, type StepTarget } from './config';
import { type ConsumerReceived } from './consumer';
import { type StepsDone } from './steps';

const TIMEOUT_MS = 60_000;

export class StepProcesses {
  private constructor(
    private readonly consumer: BenchChild,
    private readonly producer: BenchChild,
  ) {}

  static async start(script: string, url: string, cluster: string): Promise<StepProcesses> {
    const spec = JSON.stringify({ cluster });
    const consumer = await BenchChild.start(script, ['receiver', spec, url], TIMEOUT_MS, 'consumer');
    try {
      return new StepProcesses(consumer, await BenchChild.start(script, ['sender', spec, url], TIMEOUT_MS, 'producer'));
    } catch (error) {
      await consumer.stop();
      throw error;
    }
  }

  get pids(): { consumer: number; producer: number } {
    return { consumer: this.consumer.pid, producer: this.producer.pid };
  }

  /** Every thread of the consumer to placement.receiver, of the producer to placement.sender. */
  pin(placement: Placement | undefined): void {
    if (!placement) return;
    pin(this.consumer.pid, placement.receiver);
    pin(this.producer.pid, placement.sender);
  }

  /** One measurement; fails unless the consumer took every timed step's bytes. */
  async measure(s: StepScenario): Promise<Measurement> {
    const target = await this.consumer.request<StepTarget>({ cmd: 'prepare', scenario: s });
    const m = await this.producer.request<StepsDone>({ cmd: 'run', scenario: s, target });
    const got = await this.consumer.request<ConsumerReceived>({ cmd: 'finish', expected: s.count });
    if (got.count !== s.count || got.bytes !== m.bytes) {
      throw new Error(`consumer counted ${got.count} steps / ${got.bytes} bytes, expected ${s.count} / ${m.bytes}`);
    }
    const { faults, ...measured } = m;
    return {
      ...measured,
      receiverCpuNs: got.cpuNs,
      reported: { producerFaultsPerStep: faults / s.count, consumerFaultsPerStep: got.faults / s.count },
    };
  }

  async stop(): Promise<void> {
    await Promise.all([this.producer.stop(), this.consumer.stop()]);
  }
}
