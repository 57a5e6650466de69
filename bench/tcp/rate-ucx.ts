// The UCX rate row: ucx_perftest tag_bw of 8-byte messages, `window` outstanding, over
// UCX_TLS=tcp on loopback. One server/client pair per measurement; for the 16-sender scenario
// 16 pairs at once (UCX has no many-to-one test in one command), their message rates summed.
import { type Placement } from '../common/placement';
import { type Measurement } from '../common/protocol';
import { portCycle } from '../common/server-client';
import { ITERATIONS, runUcxPair } from '../common/ucx';
import { type RateScenario } from './rate-config';

export const UCX_TLS = 'tcp';
const TIMEOUT_MS = 120_000;
// Setup ports apart from bench:shm's (14337 up).
const nextPort = portCycle(15337, 480);

const RATE = 'message rate (msg/s) overall'; // iterations over the whole timed run

interface PairResult {
  iterations: number;
  rate: number;
}

async function runPair(s: RateScenario, placement: Placement | undefined): Promise<PairResult> {
  const row = await runUcxPair({
    tls: UCX_TLS,
    port: nextPort(),
    args: ['-t', 'tag_bw', '-s', String(s.size), '-O', String(s.window), '-w', String(s.warmup)],
    iterations: s.count,
    required: [RATE],
    placement,
    timeoutMs: TIMEOUT_MS,
  });
  return { iterations: row[ITERATIONS], rate: row[RATE] };
}

/** Messages/s = iterations / elapsed, elapsed derived from ucx_perftest's overall message rate. */
export async function runUcxRate(s: RateScenario, placement: Placement | undefined): Promise<Measurement> {
  if (s.senders === 1) {
    const { iterations, rate } = await runPair(s, placement);
    const reported = { [ITERATIONS]: iterations, [RATE]: rate };
    return { ops: iterations, bytes: iterations * s.size, elapsedNs: (iterations / rate) * 1e9, reported };
  }
  const started = process.hrtime.bigint();
  const pairs = await Promise.allSettled(Array.from({ length: s.senders }, () => runPair(s, undefined)));
  const wallNs = Number(process.hrtime.bigint() - started);
  const failed = pairs.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  const results = pairs.map((r) => (r as PromiseFulfilledResult<PairResult>).value);
  const ops = results.reduce((sum, r) => sum + r.iterations, 0);
  const rate = results.reduce((sum, r) => sum + r.rate, 0);
  const reported: Record<string, number> = { pairs: s.senders, [`sum of ${RATE}`]: rate };
  // Pairs that do not overlap for their whole run make the sum larger than what moved at once.
  reported['all iterations / time until the last pair exited (msg/s)'] = ops / (wallNs / 1e9);
  results.forEach((r, i) => (reported[`pair ${i} ${RATE}`] = r.rate));
  return { ops, bytes: ops * s.size, elapsedNs: (ops / rate) * 1e9, reported };
}
