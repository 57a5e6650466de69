// Drives one scenario on the sender side: untimed warm-up, then either a one-at-a-time
// round-trip loop or `window` lanes that each issue the next operation as soon as theirs resolves.
import { type Measurement, type Scenario } from './protocol';
import { quantile } from './stats';

/** Sends one message of the scenario's size; resolves when the receiver acknowledged it. */
export type Op = (lane: number) => Promise<void>;

/** Runs count ops, window at a time. After a failure no lane starts another op; all settle first. */
async function lanes(count: number, window: number, op: Op): Promise<void> {
  let issued = 0;
  let failed = false;
  const lane = async (index: number): Promise<void> => {
    while (!failed && issued < count) {
      issued++;
      try {
        await op(index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(window, count) }, (_, i) => lane(i)));
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}

export async function measure(s: Scenario, op: Op): Promise<Measurement> {
  await lanes(s.warmup, s.kind === 'rtt' ? 1 : s.window, op);
  if (s.kind === 'rtt') {
    const times = new Float64Array(s.count);
    const start = process.hrtime.bigint();
    for (let i = 0; i < s.count; i++) {
      const t0 = process.hrtime.bigint();
      await op(0);
      times[i] = Number(process.hrtime.bigint() - t0);
    }
    const elapsedNs = Number(process.hrtime.bigint() - start);
    return {
      ops: s.count,
      bytes: s.count * s.size,
      elapsedNs,
      medianOpNs: quantile(times, 0.5),
      p99OpNs: quantile(times, 0.99),
    };
  }
  const start = process.hrtime.bigint();
  await lanes(s.count, s.window, op);
  return { ops: s.count, bytes: s.count * s.size, elapsedNs: Number(process.hrtime.bigint() - start) };
}
