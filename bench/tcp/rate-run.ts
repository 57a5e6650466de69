// The message-rate part of bench:tcp (after its table; --rate-only runs only this, --no-rate
// skips it, --quick shrinks the counts): every row and scenario, repeated and interleaved,
// then the table of medians in messages/s, ratios and targets, saved to bench/results/tcp-rate-<date>.json.
import * as os from 'node:os';
import * as path from 'node:path';
import { repetitions } from '../common/args';
import { startClock } from '../common/conclude';
import { describePlacement, placementMode, placementOf } from '../common/placement';
import { Measurement, Scenario, Variant } from '../common/protocol';
import { repeat } from '../common/repeat';
import { saveResults, shownPath } from '../common/results';
import { ensureUcx } from '../shm/ucx-install';
import { counterUnavailable } from './rate-capabilities';
import { RATE_REPETITIONS, RATE_VARIANTS, RateScenario, RateVariant, rateScenarios } from './rate-config';
import { RateGroup, RestartingGroup } from './rate-group';
import { buildRateReport, formatRateReport } from './rate-report';
import { UCX_TLS, runUcxRate } from './rate-ucx';

const CHILD = path.join(__dirname, 'rate-child.js');

/** The rows this machine can run, and why the others are left out. */
async function availableVariants(): Promise<{ variants: RateVariant[]; ucxVersion?: string }> {
  let variants = RATE_VARIANTS;
  const noCounter = await counterUnavailable();
  if (noCounter) {
    console.log(`counter rows skipped: API not built (${noCounter})`);
    variants = variants.filter((v) => !v.counter);
  }
  const ucx = ensureUcx();
  if (ucx instanceof Error) {
    console.log(`UCX row skipped: ${ucx.message}`);
    variants = variants.filter((v) => v.transport !== 'ucx');
  }
  return { variants, ucxVersion: typeof ucx === 'string' ? ucx : undefined };
}

export async function runRate(root: string): Promise<void> {
  const quick = process.argv.includes('--quick');
  const reps = repetitions(RATE_REPETITIONS);
  const mode = placementMode();
  const placement = placementOf(mode);
  const scenarios = rateScenarios(quick);
  const { variants, ucxVersion } = await availableVariants();
  console.log(`\nmessage rate${quick ? ' (quick)' : ''}: one sender: ${describePlacement(mode)}; 16 senders: unpinned`);

  // One receiver and its senders per progress mode and sender count; every row runs on them.
  const groups = new Map<string, RestartingGroup>();
  const groupFor = (v: RateVariant, s: RateScenario): RestartingGroup => {
    const progress = v.progress ?? 'loop';
    const key = `${progress}x${s.senders}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = new RestartingGroup(() => RateGroup.start(CHILD, progress, s.senders))));
    return group;
  };
  try {
    const clock = startClock();
    const measure = (variant: Variant, scenario: Scenario): Promise<Measurement> => {
      const v = variant as RateVariant;
      const s = scenario as RateScenario;
      const pinned = s.senders === 1 ? placement : undefined; // 16 senders: where the scheduler puts them
      if (v.transport === 'ucx') return runUcxRate(s, pinned);
      return groupFor(v, s).measure({ ...s, row: v }, pinned);
    };
    const measured = await repeat(reps, scenarios, variants, measure);
    const report = buildRateReport(scenarios, variants, measured.samples);
    const notes = [
      `Single sender: the sender's own time from its first timed message to the last one settled. 16 senders: from the`,
      `moment all were told to go (after their warm-up) until the receiver saw the last message. UCX: UCX_TLS=${UCX_TLS},`,
      `tag_bw -s 8 -O <window>, from its overall message rate; at 16 senders it is 16 separate pairs, rates summed, not 16-to-1.`,
    ];
    console.log('');
    console.log(formatRateReport(scenarios, variants, measured.samples, report, reps, notes));
    const seconds = (Date.now() - clock.started) / 1000;
    const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
    console.log(
      `\n${measured.errors.length} failed measurements; ${seconds.toFixed(1)} s; ` +
        `load average before ${load(clock.loadBefore)}, after ${load(os.loadavg())}.`,
    );
    const file = saveResults(root, 'tcp-rate', {
      loadBefore: clock.loadBefore,
      config: { repetitions: reps, quick, placement: describePlacement(mode), scenarios, variants, ucxTls: UCX_TLS },
      report,
      samples: measured.samples,
      errors: measured.errors,
      seconds,
      extra: {
        units: { medians: 'messages/s', samples: 'ops / elapsedNs; reported: ucx_perftest figures used' },
        goals: report.goals,
        ucxVersion,
      },
    });
    console.log(`results: ${shownPath(root, file)}`);
    if (measured.errors.length) process.exitCode = 1;
  } finally {
    await Promise.all([...groups.values()].map((g) => g.stop()));
  }
}
