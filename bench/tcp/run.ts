// npm run bench:tcp [-- --reps N] [--placement same|split|none] [--variants a,b] [--scenarios x,y]:
// every variant and scenario (or the ones named), repeated and interleaved, then the table of
// medians and ratios, saved to bench/results/.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPETITIONS, SCENARIOS, TARGETS, VARIANTS } from './config';
import { Pair } from './pair';
import { Measurement, Scenario, Variant } from './protocol';
import { buildReport, formatReport, Samples } from './report';
import { canPin, describePlacement, PlacementMode, placementOf } from './placement';
import { Failure, saveResults } from './results';
import { compileSockbench, runSockbench } from './sockbench';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function repetitions(): number {
  const n = Number(option('--reps') ?? REPETITIONS);
  if (!Number.isInteger(n) || n < 1) throw new Error('--reps needs a positive integer');
  return n;
}

function placementMode(): PlacementMode {
  const mode = option('--placement') ?? 'same';
  if (mode !== 'same' && mode !== 'split' && mode !== 'none') throw new Error('--placement is same, split or none');
  if (mode !== 'none' && !canPin()) {
    console.log('taskset not usable: running unpinned');
    return 'none';
  }
  return mode;
}

/** The items whose id is in the comma-separated option, or all of them. */
function selected<T extends { id: string }>(name: string, items: T[]): T[] {
  const ids = option(name)?.split(',');
  if (!ids) return items;
  const unknown = ids.filter((id) => !items.some((item) => item.id === id));
  if (unknown.length) throw new Error(`${name}: unknown ${unknown.join(', ')} (known: ${items.map((i) => i.id).join(', ')})`);
  return items.filter((item) => ids.includes(item.id));
}

/** The variants in a different order every repetition, so no row always runs first. */
function rotated<T>(items: T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

async function main(): Promise<void> {
  const reps = repetitions();
  const loadBefore = os.loadavg();
  const mode = placementMode();
  const placement = placementOf(mode);
  const started = Date.now();
  const sockbench = compileSockbench(ROOT);
  const scenarios = selected('--scenarios', SCENARIOS);
  const variants = selected('--variants', VARIANTS).filter((v) => v.transport !== 'c' || typeof sockbench === 'string');
  if (sockbench instanceof Error) console.log(`C sockets skipped: ${sockbench.message}`);
  console.log(`placement: ${describePlacement(mode)}`);

  const pairs = new Map<string, Pair>();
  const samples: Samples = {};
  const errors: Failure[] = [];
  try {
    for (const v of variants) if (v.transport !== 'c') pairs.set(v.id, await Pair.start(v));
    const measureOne = (v: Variant, s: Scenario): Promise<Measurement> =>
      v.transport === 'c'
        ? runSockbench(sockbench as string, s, placement)
        : pairs.get(v.id)!.measure(s, placement);

    for (let rep = 0; rep < reps; rep++) {
      const t0 = Date.now();
      for (const s of scenarios) {
        for (const v of rotated(variants, rep)) {
          if (v.only && !v.only.includes(s.id)) continue;
          try {
            const m = await measureOne(v, s);
            ((samples[v.id] ??= {})[s.id] ??= []).push(m);
          } catch (error) {
            const text = error instanceof Error ? error.message : String(error);
            errors.push({ variant: v.id, scenario: s.id, repetition: rep, error: text });
            console.log(`  ${v.id} ${s.id} rep ${rep + 1} failed: ${text.split('\n')[0]}`);
          }
        }
      }
      console.log(`repetition ${rep + 1}/${reps} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    await Promise.all([...pairs.values()].map((p) => p.stop()));
    if (typeof sockbench === 'string') fs.rmSync(path.dirname(sockbench), { recursive: true, force: true });
  }

  const report = buildReport(samples);
  console.log('');
  console.log(formatReport(samples, report, reps));
  const seconds = (Date.now() - started) / 1000;
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\n${errors.length} failed measurements; ${seconds.toFixed(1)} s (after the build); ` +
      `load average before ${load(loadBefore)}, after ${load(os.loadavg())}.`,
  );

  const file = saveResults(ROOT, {
    loadBefore,
    config: { repetitions: reps, placement: describePlacement(mode), scenarios, variants, targets: TARGETS },
    report,
    samples,
    errors,
    seconds,
  });
  console.log(`results: ${path.relative(ROOT, file)}`);
  if (errors.length) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
