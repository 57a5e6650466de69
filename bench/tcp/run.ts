// npm run bench:tcp [-- --reps N] [--placement same|split|none] [--variants a,b] [--scenarios x,y]
// [--no-rate | --rate-only] [--quick]: every variant and scenario (or the ones named), repeated
// and interleaved, then the table of medians and ratios, saved to bench/results/; then the
// message-rate part (rate-run.ts; --quick shrinks its counts).
import * as path from 'node:path';
import { chosen, reportOf } from '../common/knobs';
import { removeCompiled } from '../common/compile';
import { conclude, startClock } from '../common/conclude';
import { PairSet } from '../common/pair-set';
import { describePlacement, placementMode, placementOf } from '../common/placement';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { repeat } from '../common/repeat';
import { REPETITIONS, REPORT, SCENARIOS, VARIANTS } from './config';
import { runRate } from './rate-run';
import { compileSockbench, runSockbench } from './sockbench';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'child.js');

async function runTable(): Promise<void> {
  const chose = chosen(REPETITIONS, SCENARIOS, VARIANTS);
  const { reps, scenarios } = chose;
  const mode = placementMode();
  const placement = placementOf(mode);
  const clock = startClock();
  const sockbench = compileSockbench(ROOT);
  const variants = chose.variants.filter((v) => v.transport !== 'c' || typeof sockbench === 'string');
  if (sockbench instanceof Error) console.log(`C sockets skipped: ${sockbench.message}`);
  console.log(`placement: ${describePlacement(mode)}`);

  const pairs = new PairSet(CHILD);
  try {
    for (const v of variants) if (v.transport !== 'c') await pairs.start(v);
    const measure = (v: Variant, s: Scenario): Promise<Measurement> =>
      v.transport === 'c' ? runSockbench(sockbench as string, s, placement) : pairs.measure(v, s, placement);
    const measured = await repeat(reps, scenarios, variants, measure);
    const config = { placement: describePlacement(mode), scenarios, variants };
    conclude({ root: ROOT, bench: 'tcp', spec: reportOf(REPORT, scenarios), reps, ...clock, ...measured, config });
  } finally {
    await pairs.stop();
    removeCompiled(sockbench);
  }
}

async function main(): Promise<void> {
  if (!process.argv.includes('--rate-only')) await runTable();
  if (!process.argv.includes('--no-rate')) await runRate(ROOT);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
