// ucx_perftest's -s, -n, -w and -O for the put suites: --sizes, --iterations, --warmup and
// --window reshape the scenarios chosen with --scenarios. --sizes makes one scenario per size
// and kind (round trip, bandwidth) from the first chosen scenario of that kind; a bandwidth
// scenario's counts scale with its size so that it moves about as many bytes as that one did
// (never more than 4 times its operations, never fewer than 16). The others then set every
// scenario's timed operations, warm-up and (bandwidth) puts in flight.
import { option, repetitions, selected } from './args';
import { type Scenario } from './protocol';
import { type ReportSpec } from './report';
import { parseSizes, sizeLabel } from '../../src/cli/sizes';

/** A count the command line gives: at least `min`. */
function count(name: string, min: number): number | undefined {
  const text = option(name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name} needs an integer of at least ${min}, got "${text}"`);
  return n;
}

const idOf = (bytes: number): string => sizeLabel(bytes).replace(/ (KiB|MiB|B)$/, (_, u: string) => (u === 'B' ? '' : u[0].toLowerCase()));

/** A scenario's id and label by its kind and size: rtt8 'RTT 8 B', bw64k '64 KiB', bw1m '1 MiB'. */
export function scenarioName(kind: Scenario['kind'], size: number): { id: string; label: string } {
  return { id: `${kind}${idOf(size)}`, label: kind === 'rtt' ? `RTT ${sizeLabel(size)}` : sizeLabel(size) };
}

/** What the command line chose of a suite: --reps, --scenarios (reshaped by the knobs) and --variants. */
export function chosen<S extends Scenario, V extends { id: string }>(reps: number, scenarios: S[], variants: V[]): { reps: number; scenarios: Scenario[]; variants: V[] } {
  return { reps: repetitions(reps), scenarios: withKnobs(selected('--scenarios', scenarios)), variants: selected('--variants', variants) };
}

/** The scenarios as the knobs on the command line reshape them (unchanged without any). */
export function withKnobs(chosen: Scenario[]): Scenario[] {
  const sizesText = option('--sizes');
  const iterations = count('--iterations', 1);
  const warmup = count('--warmup', 0);
  const window = count('--window', 1);
  let scenarios = chosen;
  if (sizesText !== undefined) {
    const sizes = parseSizes(sizesText);
    const kinds = [...new Set(chosen.map((s) => s.kind))];
    scenarios = kinds.flatMap((kind) => {
      const template = chosen.find((s) => s.kind === kind)!;
      return sizes.map((size): Scenario => {
        const scale = kind === 'bw' ? Math.min(4, template.size / size) : 1;
        return {
          ...template,
          ...scenarioName(kind, size),
          size,
          count: Math.max(16, Math.round(template.count * scale)),
          warmup: Math.max(1, Math.round(template.warmup * scale)),
          template: template.id,
        };
      });
    });
  }
  return scenarios.map((s) => ({
    ...s,
    count: iterations ?? s.count,
    warmup: warmup ?? s.warmup,
    window: window !== undefined && s.kind === 'bw' ? window : s.window,
  }));
}

/**
 * The report of what was measured: its columns the scenarios run, and each ratio a spec names
 * for a scenario repeated for the scenarios --sizes made from it (targets stay with the
 * scenarios they were set for).
 */
export function reportOf(spec: ReportSpec, scenarios: Scenario[]): ReportSpec {
  const made = (id: string): Scenario[] => scenarios.filter((s) => (s.template ?? s.id) === id);
  const ratios = spec.ratios.flatMap((r) => made(r.scenario).map((s) => ({ ...r, scenario: s.id })));
  return { ...spec, scenarios, ratios };
}
