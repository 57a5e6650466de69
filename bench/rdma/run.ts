// Inside the Soft-RoCE guest (npm run bench:rdma starts it there):
//   node dist/bench/rdma/run.js [--reps N] [--variants mailbox,raw,perftest] [--scenarios rtt8,bw64k]
//     [--no-rate | --rate-only] [--quick]
// Mailbox puts and raw writes over provider 'verbs' (a receiver and a sender process each),
// and perftest's ib_write_lat / ib_write_bw, every scenario repeated and interleaved; then the
// table of medians and ratios, saved to bench/results/rdma-<date>.json; then the message-rate
// part (rate-run.ts; --quick shrinks its counts).
import * as path from 'node:path';
import { Endpoint } from '../../src';
import { chosen, reportOf } from '../common/knobs';
import { conclude, startClock } from '../common/conclude';
import { PairSet } from '../common/pair-set';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { repeat } from '../common/repeat';
import { DEVICE, REPETITIONS, REPORT, SCENARIOS, VARIANTS } from './config';
import { perftestVersion, runPerftest } from './perftest';
import { runRate } from './rate-run';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'child.js');
// Every request to a child (start, one measurement) is bounded; the guest is slow, not stuck.
const CHILD_TIMEOUT_MS = 120_000;

/** Fails early, and says why, where there is no RDMA device to measure. */
function checkDevice(): void {
  const device = Endpoint.capabilities.devices.find((d) => d.name === DEVICE);
  if (!device?.activePorts) {
    throw new Error(`no ACTIVE RDMA device ${DEVICE} here; bench:rdma runs in the Soft-RoCE guest: npm run bench:rdma`);
  }
}

async function runTable(): Promise<void> {
  const { reps, scenarios, variants } = chosen(REPETITIONS, SCENARIOS, VARIANTS);
  const perftest = variants.some((v) => v.transport === 'perftest') ? perftestVersion() : undefined;
  const clock = startClock();
  const pairs = new PairSet(CHILD, CHILD_TIMEOUT_MS);
  try {
    for (const v of variants) if (v.transport !== 'perftest') await pairs.start(v);
    const measure = (v: Variant, s: Scenario): Promise<Measurement> => (v.transport === 'perftest' ? runPerftest(s) : pairs.measure(v, s));
    const measured = await repeat(reps, scenarios, variants, measure);
    const config = { device: DEVICE, scenarios, variants, perftest };
    // host.ts adds how long the guest took to boot; this is the bench process's part of the stage.
    const extra = { guest: { processSeconds: Number(process.uptime().toFixed(1)) } };
    conclude({ root: ROOT, bench: 'rdma', spec: reportOf(REPORT, scenarios), reps, ...clock, ...measured, config, extra });
  } finally {
    await pairs.stop();
  }
}

async function main(): Promise<void> {
  checkDevice();
  if (!process.argv.includes('--rate-only')) await runTable();
  if (!process.argv.includes('--no-rate')) await runRate(ROOT);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
