// The message-rate part of bench:tcp (after its table; --rate-only runs only this, --no-rate
// skips it, --quick shrinks the counts): its rows over tcp against net.Socket and UCX, run by
// rate-bench.ts and saved to bench/results/tcp-rate-<date>.json.
import * as path from 'node:path';
import { repetitions } from '../common/args';
import { describePlacement, placementMode, placementOf } from '../common/placement';
import { ensureUcx } from '../common/ucx-install';
import { runRateBench } from './rate-bench';
import { withCountersIfBuilt } from './rate-capabilities';
import { RATE_GOALS, RATE_RATIOS, RATE_REPETITIONS, RATE_VARIANTS, type RateVariant, rateScenarios } from './rate-config';
import { UCX_TLS, runUcxRate } from './rate-ucx';

const CHILD = path.join(__dirname, 'rate-child.js');

/** The rows this machine can run, and why the others are left out. */
async function availableVariants(): Promise<{ variants: RateVariant[]; ucxVersion?: string }> {
  let variants = await withCountersIfBuilt(RATE_VARIANTS);
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
  const scenarios = rateScenarios(quick);
  const { variants, ucxVersion } = await availableVariants();
  console.log(`\nmessage rate${quick ? ' (quick)' : ''}: one sender: ${describePlacement(mode)}; 16 senders: unpinned`);
  await runRateBench(root, {
    name: 'tcp-rate',
    over: 'TCP loopback',
    child: CHILD,
    reps,
    scenarios,
    variants,
    targets: { ratios: RATE_RATIOS, goals: RATE_GOALS },
    placement: placementOf(mode),
    runTool: (_v, s, pinned) => runUcxRate(s, pinned),
    notes: [
      `Single sender: the sender's own time from its first timed message to the last one settled. 16 senders: from the`,
      `moment all were told to go (after their warm-up) until the receiver saw the last message. UCX: UCX_TLS=${UCX_TLS},`,
      `tag_bw -s 8 -O <window>, from its overall message rate; at 16 senders it is 16 separate pairs, rates summed, not 16-to-1.`,
    ],
    config: { repetitions: reps, quick, placement: describePlacement(mode), scenarios, variants, ucxTls: UCX_TLS },
    units: { medians: 'messages/s', samples: 'ops / elapsedNs; reported: ucx_perftest figures used' },
    extra: () => ({ ucxVersion }),
  });
}
