// npm run bench:rendezvous [-- --quick] [--reps N] [--placement same,split] [--scenarios ..] [--transports ..]: tensor
// rendezvous steps against plain puts of the same bytes, same two processes over tcp; tables, JSON to bench/results/.
import * as os from 'node:os';
import * as path from 'node:path';
import { option, repetitions, selected } from '../common/args';
import { startClock } from '../common/conclude';
import { type PlacementMode, canPin, describePlacement, placementOf } from '../common/placement';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { buildReport } from '../common/report';
import { repeat } from '../common/repeat';
import { revision, saveResults, shownPath } from '../common/results';
import { privateRedis } from '../../support/private-redis';
import { PLACEMENTS, type PlacedVariant, REPETITIONS, TARGETS, TRANSPORTS, placedId, scenarios as allScenarios } from './config';
import { StepProcesses } from './processes';
import { formatReport, reportSpec } from './report';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'child.js');

function placements(): PlacementMode[] {
  const modes = (option('--placement') ?? PLACEMENTS.join(',')).split(',') as PlacementMode[];
  const unknown = modes.filter((m) => m !== 'same' && m !== 'split' && m !== 'none');
  if (unknown.length) throw new Error(`--placement: unknown ${unknown.join(', ')} (known: same, split, none)`);
  if (modes.some((m) => m !== 'none') && !canPin()) {
    console.log('taskset not usable: running unpinned only');
    return ['none'];
  }
  return [...new Set(modes)];
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const reps = repetitions(quick ? 2 : REPETITIONS);
  const scenarios = selected('--scenarios', allScenarios(quick).map((s) => ({ ...s, transport: 'put' as const })));
  const transports = selected('--transports', TRANSPORTS);
  const modes = placements();
  const variants: PlacedVariant[] = modes.flatMap((placement) =>
    transports.map((t) => ({ id: placedId(t.id, placement), label: t.label, transport: t.id, placement })),
  );
  const rev = revision(ROOT);
  console.log(`commit ${rev?.commit ?? 'unknown'}${rev?.librarySourcesModified ? ' (src/ or native/ modified since)' : ''}`);
  for (const mode of modes) console.log(`placement ${mode}: ${describePlacement(mode)}`);
  console.log('redis-server: unpinned (the directory is a service of its own, as in a deployment)');

  const redis = await privateRedis();
  let processes: StepProcesses | undefined;
  try {
    processes = await StepProcesses.start(CHILD, redis.url, `bench-rendezvous-${process.pid}`);
    const procs = processes;
    const clock = startClock();
    const measure = (v: Variant, s: Scenario): Promise<Measurement> => {
      const placed = v as PlacedVariant;
      procs.pin(placementOf(placed.placement));
      return procs.measure({ ...(s as (typeof scenarios)[number]), transport: placed.transport });
    };
    const measured = await repeat(reps, scenarios, variants, measure);
    const spec = reportSpec(scenarios, variants);
    const report = buildReport(spec, measured.samples);
    console.log('');
    console.log(formatReport(spec, measured.samples, report, reps));
    const seconds = (Date.now() - clock.started) / 1000;
    const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
    console.log(
      `\n${measured.errors.length} failed measurements; ${seconds.toFixed(1)} s (after the build); ` +
        `load average before ${load(clock.loadBefore)}, after ${load(os.loadavg())}.`,
    );
    const file = saveResults(ROOT, 'rendezvous', {
      loadBefore: clock.loadBefore,
      config: {
        repetitions: reps,
        quick,
        subject: spec.subject,
        scenarios,
        variants,
        placements: modes.map((m) => describePlacement(m)),
        targets: TARGETS,
        redis: 'private redis-server, unpinned',
      },
      report,
      samples: measured.samples,
      errors: measured.errors,
      seconds,
      extra: {
        units: {
          ping: 'µs per round trip (median of per-step times); p99OpNs likewise',
          bw: 'MiB/s of tensor bytes (K tensors per step, answer included in the step time)',
          reported: 'minor page faults per timed step, each process',
        },
      },
    });
    console.log(`results: ${shownPath(ROOT, file)}`);
    if (measured.errors.length) process.exitCode = 1;
  } finally {
    await processes?.stop();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
