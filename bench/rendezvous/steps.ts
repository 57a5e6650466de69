// Runs a scenario's steps on either side: untimed warm-up steps, then the timed ones, with the
// per-step times (ping-pong round trips), the elapsed time and the page faults of the timed steps.
import { type Measurement } from '../common/protocol';
import { quantile } from '../common/stats';
import { type StepScenario } from './config';
import { minorFaults } from './faults';

/** One step: resolves once this side has done its part of step `id`. */
export type Step = (id: number) => Promise<void>;

export interface StepsDone extends Measurement {
  /** Minor page faults of this process over the timed steps. */
  faults: number;
}

export async function driveSteps(s: StepScenario, firstStep: number, step: Step): Promise<StepsDone> {
  let id = firstStep;
  for (let i = 0; i < s.warmup; i++) await step(id++);
  const times = new Float64Array(s.count);
  const faults = minorFaults();
  const start = process.hrtime.bigint();
  for (let i = 0; i < s.count; i++) {
    const t0 = process.hrtime.bigint();
    await step(id++);
    times[i] = Number(process.hrtime.bigint() - t0);
  }
  const elapsedNs = Number(process.hrtime.bigint() - start);
  return {
    ops: s.count,
    bytes: s.count * s.tensors * s.size,
    elapsedNs,
    medianOpNs: quantile(times, 0.5),
    p99OpNs: quantile(times, 0.99),
    faults: minorFaults() - faults,
  };
}
