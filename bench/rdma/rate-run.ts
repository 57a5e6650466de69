// The message-rate part of bench:rdma (after its table; --rate-only runs only this, --no-rate
// skips it, --quick shrinks the counts): mailbox puts against raw writes over verbs and
// perftest, run by bench/tcp/rate-bench.ts, saved to bench/results/rdma-rate-<date>.json.
import * as path from 'node:path';
import { repetitions } from '../common/args';
import { runRateBench } from '../tcp/rate-bench';
import { withCountersIfBuilt } from '../tcp/rate-capabilities';
import { DEVICE } from './config';
import { perftestVersion, runPerftestRate } from './perftest';
import { RATE_RATIOS, RATE_REPETITIONS, RATE_VARIANTS, rateScenarios } from './rate-config';

const CHILD = path.join(__dirname, 'rate-child.js');

export async function runRate(root: string): Promise<void> {
  const quick = process.argv.includes('--quick');
  const reps = repetitions(RATE_REPETITIONS);
  const scenarios = rateScenarios(quick);
  const variants = await withCountersIfBuilt(RATE_VARIANTS);
  const perftest = perftestVersion();
  console.log(`\nmessage rate${quick ? ' (quick)' : ''}: one sender, over verbs on ${DEVICE}, unpinned`);
  await runRateBench(root, {
    name: 'rdma-rate',
    over: `verbs (Soft-RoCE ${DEVICE})`,
    child: CHILD,
    reps,
    scenarios,
    variants,
    targets: { ratios: RATE_RATIOS, goals: [] },
    runTool: (_v, s) => runPerftestRate(s),
    notes: [
      `The sender's own time from its first timed message to the last one settled; every measurement checks the`,
      `receiver saw each message. perftest: ib_write_bw -s 8 -t <window> -n <count>, its MsgRate (C, busy polling).`,
    ],
    config: { repetitions: reps, quick, device: DEVICE, scenarios, variants, perftest },
    units: { medians: 'messages/s', samples: 'ops / elapsedNs; reported: perftest figures used' },
    // host.ts adds how long the guest took to boot; this is the bench process's part of the stage.
    extra: () => ({ guest: { processSeconds: Number(process.uptime().toFixed(1)) } }),
  });
}
