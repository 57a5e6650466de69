// Runs a bench's message-rate part: every row and scenario, repeated and interleaved, each
// measurement checked against the receiver's count; then the table of medians in messages/s,
// ratios and targets, saved to bench/results/<name>-<date>.json. bench:tcp and bench:rdma say
// what differs: the child entry (its provider), the rows, the amounts, the external tool.
import * as os from 'node:os';
import { startClock } from '../common/conclude';
import { type Placement } from '../common/placement';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { repeat } from '../common/repeat';
import { saveResults, shownPath } from '../common/results';
import { type RateScenario, type RateVariant, byTool } from './rate-config';
import { RateGroup, RestartingGroup } from './rate-group';
import { type RateTargets, buildRateReport, formatRateReport } from './rate-report';

export interface RateBench {
  /** The results file: <name>-<date>.json. */
  name: string;
  /** Where the messages travel, for the table's title. */
  over: string;
  /** The child entry that serves the receiver and the senders (rate-serve.ts). */
  child: string;
  reps: number;
  scenarios: RateScenario[];
  variants: RateVariant[];
  targets: RateTargets;
  /** Where single-sender rows run; undefined: where the scheduler puts them. */
  placement?: Placement;
  /** Measures the rows an external program runs (byTool). */
  runTool?(v: RateVariant, s: RateScenario, placement: Placement | undefined): Promise<Measurement>;
  /** Lines printed under the table. */
  notes: string[];
  /** The results record's config. */
  config: unknown;
  /** What the record's samples and medians mean. */
  units: Record<string, string>;
  /** More fields for the record, asked for when it is saved. */
  extra?(): Record<string, unknown>;
}

export async function runRateBench(root: string, b: RateBench): Promise<void> {
  // One receiver and its senders per progress mode and sender count; every row runs on them.
  const groups = new Map<string, RestartingGroup>();
  const groupFor = (v: RateVariant, s: RateScenario): RestartingGroup => {
    const progress = v.progress ?? 'loop';
    const key = `${progress}x${s.senders}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = new RestartingGroup(() => RateGroup.start(b.child, progress, s.senders))));
    return group;
  };
  try {
    const clock = startClock();
    const measure = (variant: Variant, scenario: Scenario): Promise<Measurement> => {
      const v = variant as RateVariant;
      const s = scenario as RateScenario;
      const pinned = s.senders === 1 ? b.placement : undefined; // several senders: where the scheduler puts them
      if (byTool(v)) {
        if (!b.runTool) throw new Error(`no external program runs row ${v.id}`);
        return b.runTool(v, s, pinned);
      }
      return groupFor(v, s).measure({ ...s, row: v }, pinned);
    };
    const measured = await repeat(b.reps, b.scenarios, b.variants, measure);
    const report = buildRateReport(b.scenarios, b.variants, measured.samples, b.targets);
    console.log('');
    console.log(formatRateReport(b.scenarios, b.variants, measured.samples, report, b.reps, b.notes, b.over));
    const seconds = (Date.now() - clock.started) / 1000;
    const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
    console.log(
      `\n${measured.errors.length} failed measurements; ${seconds.toFixed(1)} s; ` +
        `load average before ${load(clock.loadBefore)}, after ${load(os.loadavg())}.`,
    );
    const file = saveResults(root, b.name, {
      loadBefore: clock.loadBefore,
      config: b.config,
      report,
      samples: measured.samples,
      errors: measured.errors,
      seconds,
      extra: { units: b.units, goals: report.goals, ...b.extra?.() },
    });
    console.log(`results: ${shownPath(root, file)}`);
    if (measured.errors.length) process.exitCode = 1;
  } finally {
    await Promise.all([...groups.values()].map((g) => g.stop()));
  }
}
