// The UCX rate row: ucx_perftest tag_bw of 8-byte messages, `window` outstanding, over
// UCX_TLS=tcp on loopback. One server/client pair per measurement; for the 16-sender scenario
// 16 pairs at once (UCX has no many-to-one test in one command), their message rates summed.
import { waitListening } from '../common/listening';
import { type Placement, pinned } from '../common/placement';
import { runProgram } from '../common/process';
import { type Measurement } from '../common/protocol';
import { parseUcxFinal } from '../shm/ucx-output';
import { type RateScenario } from './rate-config';

export const UCX_TLS = 'tcp';
const TIMEOUT_MS = 120_000;
const LISTEN_TIMEOUT_MS = 10_000;
// Fresh ports for each pair's setup exchange, so one in TIME_WAIT never matters (bench:shm uses 14337 up).
const FIRST_PORT = 15337;
const PORTS = 480;
let nextPort = 0;

const ITERATIONS = '# iterations';
const RATE = 'message rate (msg/s) overall'; // iterations over the whole timed run

interface PairResult {
  iterations: number;
  rate: number;
}

async function runPair(s: RateScenario, placement: Placement | undefined): Promise<PairResult> {
  const port = String(FIRST_PORT + (nextPort++ % PORTS));
  const args = ['-t', 'tag_bw', '-s', String(s.size), '-O', String(s.window), '-n', String(s.count), '-w', String(s.warmup)];
  const options = { timeoutMs: TIMEOUT_MS, env: { ...process.env, UCX_TLS } };
  const server = runProgram(...pinned(placement?.receiver, 'ucx_perftest', ['-p', port]), options);
  try {
    await waitListening(Number(port), LISTEN_TIMEOUT_MS, server.output);
    const client = runProgram(...pinned(placement?.sender, 'ucx_perftest', ['127.0.0.1', '-p', port, ...args]), options);
    const [out] = await Promise.all([client.output, server.output]);
    const row = parseUcxFinal(out, [ITERATIONS, RATE]);
    if (row[ITERATIONS] !== s.count) throw new Error(`ucx_perftest ran ${row[ITERATIONS]} iterations, asked for ${s.count}`);
    return { iterations: row[ITERATIONS], rate: row[RATE] };
  } finally {
    server.kill(); // a no-op once it exited; stops it when its client failed
  }
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
