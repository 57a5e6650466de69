// The pairs of one run (a receiver and a sender process per variant, bench/common/pair.ts), by
// variant id: each measurement pins its pair to the run's placement first; stop() ends them all.
import { Pair } from './pair';
import { type Placement, pin } from './placement';
import { type Measurement, type Scenario, type Variant } from './protocol';

export class PairSet {
  private readonly pairs = new Map<string, Pair>();

  /** script: the suite's compiled child.js; timeoutMs bounds each start and request (Pair's default if omitted). */
  constructor(
    private readonly script: string,
    private readonly timeoutMs?: number,
  ) {}

  async start(variant: Variant): Promise<void> {
    this.pairs.set(variant.id, await Pair.start(this.script, variant, this.timeoutMs));
  }

  /** One measurement by the variant's pair, its receiver and sender on the placement's CPUs. */
  measure(variant: Variant, scenario: Scenario, placement?: Placement): Promise<Measurement> {
    const pair = this.pairs.get(variant.id)!;
    if (placement) {
      pin(pair.receiverPid, placement.receiver);
      pin(pair.senderPid, placement.sender);
    }
    return pair.measure(scenario);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.pairs.values()].map((p) => p.stop()));
  }
}
