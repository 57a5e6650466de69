// Orchestrator side of one variant: a receiver and a sender child process (forked on a
// benchmark's compiled child.js), kept alive across repetitions and driven by requests.
import { BenchChild } from './child-process';
import { type Measurement, type Received, type Scenario, type Target, type Variant } from './protocol';

// A bound for a hung child, not a measure of speed: on a loaded 2-CPU machine with the
// sanitized addon a small measurement has taken tens of seconds (the ASan run of
// test/cli/bench.test.ts took 125-167 s for what takes 24 s alone).
const DEFAULT_TIMEOUT_MS = 120_000;

export class Pair {
  private constructor(
    private readonly receiver: BenchChild,
    private readonly sender: BenchChild,
  ) {}

  /**
   * Forks `script receiver VARIANT`, then `script sender VARIANT ADDRESS` with the address the
   * receiver reported. timeoutMs bounds the start of each child and every request.
   */
  static async start(script: string, variant: Variant, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Pair> {
    const spec = JSON.stringify(variant);
    const receiver = await BenchChild.start(script, ['receiver', spec], timeoutMs);
    try {
      const sender = await BenchChild.start(script, ['sender', spec, receiver.address], timeoutMs);
      return new Pair(receiver, sender);
    } catch (error) {
      await receiver.stop();
      throw error;
    }
  }

  get receiverPid(): number {
    return this.receiver.pid;
  }

  get senderPid(): number {
    return this.sender.pid;
  }

  /** One measurement; fails if the receiver did not see every message exactly once. */
  async measure(scenario: Scenario): Promise<Measurement> {
    const target = await this.receiver.request<Target>({ cmd: 'prepare', scenario });
    const m = await this.sender.request<Measurement>({ cmd: 'run', scenario, target });
    const expected = scenario.warmup + scenario.count;
    const got = await this.receiver.request<Received>({ cmd: 'finish', expected });
    if (got.count !== expected || got.bytes !== expected * scenario.size) {
      throw new Error(
        `receiver counted ${got.count} messages / ${got.bytes} bytes, expected ${expected} / ${expected * scenario.size}`,
      );
    }
    return { ...m, receiverCpuNs: got.cpuNs };
  }

  async stop(): Promise<void> {
    await Promise.all([this.sender.stop(), this.receiver.stop()]);
  }
}
