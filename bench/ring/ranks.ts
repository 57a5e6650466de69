// Orchestrator side of one ring: its rank processes forked on child.js together (Ring.join waits
// for every rank), kept across repetitions, pinned per placement, driven as common/pair.ts drives a pair.
import { BenchChild } from '../common/child-process';
import { pin } from '../common/placement';
import { type Measurement, type Received, type Scenario } from '../common/protocol';
import { type RankSpec } from './child';
import { RANKS } from './config';

const TIMEOUT_MS = 60_000;

function startRank(script: string, spec: RankSpec, url: string): Promise<BenchChild> {
  const role = spec.rank === 0 ? 'sender' : 'receiver';
  return BenchChild.start(script, [role, JSON.stringify(spec), url], TIMEOUT_MS, `rank ${spec.rank} of ${spec.id}`);
}

export class RingProcesses {
  private constructor(private readonly ranks: BenchChild[]) {}

  /** Forks the ring's ranks at once; resolves when every one of them has joined. */
  static async start(script: string, variant: Omit<RankSpec, 'rank'>, url: string): Promise<RingProcesses> {
    const started = [...Array(RANKS).keys()].map((rank) => startRank(script, { ...variant, rank }, url));
    const settled = await Promise.allSettled(started);
    const ranks = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(ranks.map((r) => r.stop()));
      throw failed.reason;
    }
    return new RingProcesses(ranks);
  }

  get pids(): number[] {
    return this.ranks.map((r) => r.pid);
  }

  /** Moves every thread of rank r to cpus[r]. */
  pin(cpus: string[]): void {
    this.ranks.forEach((r, i) => pin(r.pid, cpus[i]));
  }

  /** One measurement at rank 0; fails unless ranks 1 and 2 each passed every frame (or record) on once. */
  async measure(scenario: Scenario): Promise<Measurement> {
    const [origin, ...forwarders] = this.ranks;
    await Promise.all(forwarders.map((f) => f.request({ cmd: 'prepare', scenario })));
    const m = await origin.request<Measurement>({ cmd: 'run', scenario, target: {} });
    const expected = scenario.warmup + scenario.count;
    const got = await Promise.all(forwarders.map((f) => f.request<Received>({ cmd: 'finish', expected })));
    got.forEach((g, i) => {
      if (g.count !== expected) throw new Error(`rank ${i + 1} passed on ${g.count} frames or records, expected ${expected}`);
    });
    return { ...m, receiverCpuNs: got.reduce((sum, g) => sum + (g.cpuNs ?? 0), 0), receiverWakeups: got.reduce((sum, g) => sum + (g.wakeups ?? 0), 0) };
  }

  async stop(): Promise<void> {
    await Promise.all(this.ranks.map((r) => r.stop()));
  }
}
