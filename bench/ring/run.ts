// npm run bench:ring [-- --quick] [--reps N] [--iterations N] [--transports a,b] [--scenarios x,y]
// [--placement same,none,split] [--no-pipeline]: the rvma ring (tcp and shm) against a LEAP-style
// net.Socket ring, 3 rank processes each, found through a private Redis, and a C TCP ring
// (bench/c/ringbench.c, 3 processes per measurement): (a) hop latency, (b) pipelined frames/s,
// around(); then (c) the pipeline example over the rvma and net.Socket rings. Tables of medians
// and target ratios, saved to bench/results/ring-<date>.json.
import * as os from 'node:os';
import * as path from 'node:path';
import { option, repetitions, selected } from '../common/args';
import { removeCompiled } from '../common/compile';
import { startClock } from '../common/conclude';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { repeat } from '../common/repeat';
import { saveResults, shownPath } from '../common/results';
import { RANKS, REPETITIONS, TARGETS, TRANSPORTS, scenarios as allScenarios } from './config';
import { describeRanks, placementModes, rankCpus } from './placement';
import { RingProcesses } from './ranks';
import { compileRingbench, runCRing } from './c-ring';
import { privateRedis } from '../../support/private-redis';
import { buildRingReport, formatRingReport, type PlacedVariant, placedId } from './report';
import { PIPELINE_REPS, pipelineScenario } from './pipeline';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'child.js');

function iterations(): number | undefined {
  const text = option('--iterations');
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 16) throw new Error('--iterations needs an integer of at least 16');
  return n;
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const reps = repetitions(quick ? 2 : REPETITIONS);
  const scenarios = selected('--scenarios', allScenarios(quick, iterations()));
  const chosen = selected('--transports', TRANSPORTS);
  const modes = placementModes();
  for (const mode of modes) console.log(`placement: ${describeRanks(mode, RANKS)}`);

  const redis = await privateRedis();
  const rings = new Map<string, RingProcesses>();
  // Compiled once per run; without cc the C row is left out and the ratios against it unmeasured.
  const ringbench = chosen.some((t) => t.transport === 'c') ? compileRingbench(ROOT) : undefined;
  try {
    if (ringbench instanceof Error) console.log(`C TCP ring skipped: ${ringbench.message.split('\n')[0]}`);
    const transports = chosen.filter((t) => t.transport !== 'c' || typeof ringbench === 'string');
    const variants: PlacedVariant[] = modes.flatMap((placement) =>
      transports.map((t) => ({ ...t, id: placedId(t.id, placement), ring: t.id, placement })),
    );
    const cluster = `bench-ring-${process.pid}`;
    for (const t of transports) {
      if (t.transport === 'c') continue;
      rings.set(t.id, await RingProcesses.start(CHILD, { ...t, group: t.id, cluster }, redis.url));
      console.log(`${t.label}: ranks joined (pids ${rings.get(t.id)!.pids.join(', ')})`);
    }
    const clock = startClock();
    const measure = (v: Variant, s: Scenario): Promise<Measurement> => {
      const placed = v as PlacedVariant;
      if (placed.transport === 'c') return runCRing(ringbench as string, s, rankCpus(placed.placement, RANKS));
      const ring = rings.get(placed.ring)!;
      ring.pin(rankCpus(placed.placement, RANKS));
      return ring.measure(s);
    };
    const measured = await repeat(reps, scenarios, variants, measure, { warmUpPass: true });
    const report = buildRingReport(scenarios, variants, measured.samples);
    console.log('');
    console.log(formatRingReport(scenarios, variants, measured.samples, report, reps));
    const seconds = (Date.now() - clock.started) / 1000;
    const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
    console.log(
      `\n${measured.errors.length} failed measurements; ${seconds.toFixed(1)} s (after the build and the ring joins); ` +
        `load average before ${load(clock.loadBefore)}, after ${load(os.loadavg())}.`,
    );
    // The rings of (a) and (b) stop first: the example's workers need the CPUs.
    await Promise.all([...rings.values()].map((r) => r.stop()));
    rings.clear();
    const pipeline = process.argv.includes('--no-pipeline') ? undefined : await pipelineScenario(quick ? 1 : PIPELINE_REPS, quick);
    if (pipeline) console.log(`\n${pipeline.text}`);
    const file = saveResults(ROOT, 'ring', {
      loadBefore: clock.loadBefore,
      config: { repetitions: reps, quick, scenarios, variants, placements: modes.map((m) => describeRanks(m, RANKS)), targets: TARGETS },
      report,
      samples: measured.samples,
      errors: measured.errors,
      seconds,
      extra: {
        units: {
          hop: 'µs per hop (round trip / 3), median of per-frame times; hopP99 likewise at p99',
          frames: 'frames per second back at rank 0',
          around: 'µs per ring.around()',
          hopWork: 'µs per hop after each rank worked on the frame (round trip less the forwarders\' work, / 3), median',
          cpuHop: 'CPU µs per frame, all ranks, hop scenario',
          cpuFrames: 'CPU µs per frame, all ranks, frames scenario',
          wakeHop: 'wake-ups (voluntary context switches, all threads) per frame and rank, hop scenario',
          wakeFrames: 'wake-ups (voluntary context switches, all threads) per frame and rank, frames scenario',
          wakeHopWork: 'wake-ups (voluntary context switches, all threads) per frame and rank, hop-work scenario',
        },
        pipeline: pipeline?.medians,
      },
    });
    console.log(`results: ${shownPath(ROOT, file)}`);
    if (measured.errors.length) process.exitCode = 1;
  } finally {
    if (ringbench) removeCompiled(ringbench);
    await Promise.all([...rings.values()].map((r) => r.stop()));
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
