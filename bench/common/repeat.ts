// The repetition loop: every scenario of every variant, `reps` times, interleaved so that a
// slow phase of the machine spreads over all rows instead of hitting one. A failed measurement
// is recorded and the run goes on.
import { reportProgress } from '../../src/cli/progress';
import { type Measurement, type Scenario, type Variant } from './protocol';
import { type Samples } from './report';
import { type Failure } from './results';

/** The variants in a different order every repetition, so no row always runs first. */
export function rotated<T>(items: T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

export async function repeat(
  reps: number,
  scenarios: Scenario[],
  variants: Variant[],
  measure: (v: Variant, s: Scenario) => Promise<Measurement>,
  options: { warmUpPass?: boolean } = {},
): Promise<{ samples: Samples; errors: Failure[] }> {
  const samples: Samples = {};
  const errors: Failure[] = [];
  const runs = (s: Scenario, v: Variant): boolean => !v.only || v.only.includes(s.template ?? s.id);
  if (options.warmUpPass) {
    // Processes that live across repetitions measure their JIT compiling in the first one:
    // a pass that is not kept puts every row's first repetition in the steady state too.
    const t0 = Date.now();
    for (const s of scenarios) for (const v of variants) if (runs(s, v)) await measure(v, s).catch(() => undefined);
    console.log(`warm-up pass (not kept) done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const total = reps * scenarios.reduce((n, s) => n + variants.filter((v) => runs(s, v)).length, 0);
  let done = 0;
  for (let rep = 0; rep < reps; rep++) {
    const t0 = Date.now();
    for (const s of scenarios) {
      for (const v of rotated(variants, rep)) {
        if (!runs(s, v)) continue;
        reportProgress({ done, total, repetition: rep + 1, repetitions: reps, scenario: s.label, row: v.label });
        try {
          const m = await measure(v, s);
          ((samples[v.id] ??= {})[s.id] ??= []).push(m);
        } catch (error) {
          const text = error instanceof Error ? error.message : String(error);
          errors.push({ variant: v.id, scenario: s.id, repetition: rep, error: text });
          console.log(`  ${v.id} ${s.id} rep ${rep + 1} failed: ${text.split('\n')[0]}`);
        }
        done++;
      }
    }
    console.log(`repetition ${rep + 1}/${reps} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  reportProgress({ done, total, repetition: reps, repetitions: reps, scenario: '', row: '' });
  return { samples, errors };
}
