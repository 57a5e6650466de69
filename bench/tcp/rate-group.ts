// Orchestrator side of the rate rows: one receiver process and its senders (1, or 16 into the
// same mailbox), kept across repetitions and driven one measurement at a time.
import { BenchChild } from '../common/child-process';
import { type Placement, pin } from '../common/placement';
import { type Measurement, type Target } from '../common/protocol';
import { type RateChildSpec, type RowScenario } from './rate-config';
import { type RateReceived } from './rate-tally';

/** Bounds every child's start and every request (a full 16-sender measurement included). */
const TIMEOUT_MS = 120_000;
/** How long a child may take to exit when told to, before it is killed. */
const STOP_GRACE_MS = 5_000;

function spec(s: RateChildSpec): string {
  return JSON.stringify(s);
}

/** Asks the child to exit; kills it if it has not within STOP_GRACE_MS. */
async function stopWithin(child: BenchChild): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_GRACE_MS)));
  const how = await Promise.race([child.stop().then(() => 'stopped' as const), late]);
  clearTimeout(timer);
  if (how === 'late') {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export class RateGroup {
  private constructor(
    private readonly receiver: BenchChild,
    private readonly senders: BenchChild[],
  ) {}

  static async start(script: string, progress: RateChildSpec['progress'], senders: number): Promise<RateGroup> {
    const receiver = await BenchChild.start(script, ['receiver', spec({ progress })], TIMEOUT_MS, 'rate receiver');
    const started = await Promise.allSettled(
      Array.from({ length: senders }, (_, index) =>
        BenchChild.start(script, ['sender', spec({ progress, index }), receiver.address], TIMEOUT_MS, `rate sender ${index}`),
      ),
    );
    const ok = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const group = new RateGroup(receiver, ok);
    if (failed) {
      await group.stop();
      throw failed.reason;
    }
    return group;
  }

  /** Every thread of the receiver and of the (single) sender on the placement's CPUs. */
  pin(placement: Placement | undefined): void {
    if (!placement) return;
    pin(this.receiver.pid, placement.receiver);
    for (const sender of this.senders) pin(sender.pid, placement.sender);
  }

  /**
   * One measurement; fails unless the receiver counted exactly every message. One sender
   * times itself. Several first all run their warm-up; then they are all told to go, and the
   * time runs from then until the receiver saw the last message.
   */
  async measure(s: RowScenario): Promise<Measurement> {
    const target = await this.receiver.request<Target>({ cmd: 'prepare', scenario: s });
    const run = (scenario: RowScenario): Promise<Measurement[]> => this.all(scenario, target);
    let measured: Measurement;
    let startNs = 0n;
    if (this.senders.length === 1) [measured] = await run(s);
    else {
      const warm = await run({ ...s, count: 0 });
      startNs = process.hrtime.bigint();
      const timed = await run({ ...s, warmup: 0 });
      const ops = s.count * this.senders.length;
      const cpu = [...warm, ...timed].reduce((sum, m) => sum + (m.senderCpuNs ?? 0), 0);
      measured = { ops, bytes: ops * s.size, elapsedNs: 0, senderCpuNs: cpu };
    }
    const expected = this.senders.length * (s.warmup + s.count);
    const got = await this.receiver.request<RateReceived>({ cmd: 'finish', expected });
    if (got.count !== expected) throw new Error(`receiver counted ${got.count} messages, expected ${expected}`);
    if (this.senders.length > 1) measured.elapsedNs = Number(BigInt(got.lastNs!) - startNs);
    return { ...measured, receiverCpuNs: got.cpuNs };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.senders, this.receiver].map(stopWithin));
  }

  /** Every sender runs s; each one's failure waits for the others, so none is left running. */
  private async all(s: RowScenario, target: Target): Promise<Measurement[]> {
    const runs = await Promise.allSettled(
      this.senders.map((sender) => sender.request<Measurement>({ cmd: 'run', scenario: s, target })),
    );
    const failed = runs.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return runs.map((r) => (r as PromiseFulfilledResult<Measurement>).value);
  }
}

/** A group started on first use, and started afresh after a failed measurement (the old one is killed). */
export class RestartingGroup {
  private group: Promise<RateGroup> | undefined;

  constructor(private readonly start: () => Promise<RateGroup>) {}

  async measure(s: RowScenario, placement: Placement | undefined): Promise<Measurement> {
    const starting = (this.group ??= this.start());
    let group: RateGroup;
    try {
      group = await starting;
    } catch (error) {
      this.group = undefined;
      throw error;
    }
    try {
      group.pin(placement);
      return await group.measure(s);
    } catch (error) {
      this.group = undefined;
      await group.stop();
      throw error;
    }
  }

  async stop(): Promise<void> {
    const starting = this.group;
    this.group = undefined;
    const group = await starting?.catch(() => undefined);
    await group?.stop();
  }
}
