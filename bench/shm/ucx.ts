// The UCX row: ucx_perftest over UCX_TLS=posix,cma,self (same host), tag_lat for round trips
// and tag_bw with `window` sends in flight, one server/client pair per measurement.
import { waitListening } from '../common/listening';
import { type Placement, pinned } from '../common/placement';
import { runProgram } from '../common/process';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { parseUcxFinal } from './ucx-output';

export const UCX_TLS = 'posix,cma,self';
const TIMEOUT_MS = 60_000;
const LISTEN_TIMEOUT_MS = 10_000;
// A fresh port for each pair's setup exchange, so one in TIME_WAIT never matters.
const FIRST_PORT = 14337;
const PORTS = 500;
let nextPort = 0;
// Two polling processes on one CPU take turns a scheduler slice at a time (bench:shm, same
// placement: 4 ms per tag_lat message, 2 ms per 64 KiB tag_bw send), so they get fewer iterations.
export const ONE_CPU_POLL_ITERATIONS = 500;
const ONE_CPU_POLL_WARMUP = 20;

const ITERATIONS = '# iterations';
const LATENCY = 'latency (usec) 50.0%ile'; // the median of half round trips
const LATENCY_AVERAGE = 'latency (usec) overall';
const BANDWIDTH = 'bandwidth (MB/s) overall'; // UCX's MB are MiB (2^20 bytes)

function spinsOnOneCpu(v: Variant, placement: Placement | undefined): boolean {
  return placement !== undefined && placement.receiver === placement.sender && !(v.args ?? []).includes('sleep');
}

export async function runUcx(v: Variant, s: Scenario, placement: Placement | undefined): Promise<Measurement> {
  const few = spinsOnOneCpu(v, placement);
  const iterations = few ? Math.min(s.count, ONE_CPU_POLL_ITERATIONS) : s.count;
  const warmup = few ? Math.min(s.warmup, ONE_CPU_POLL_WARMUP) : s.warmup;
  const port = String(FIRST_PORT + (nextPort++ % PORTS));
  const test = s.kind === 'rtt' ? ['-t', 'tag_lat'] : ['-t', 'tag_bw', '-O', String(s.window)];
  const args = [...test, '-s', String(s.size), '-n', String(iterations), '-w', String(warmup), ...(v.args ?? [])];
  const options = { timeoutMs: TIMEOUT_MS, env: { ...process.env, UCX_TLS } };
  const server = runProgram(...pinned(placement?.receiver, 'ucx_perftest', ['-p', port]), options);
  try {
    await waitListening(Number(port), LISTEN_TIMEOUT_MS, server.output);
    const client = runProgram(...pinned(placement?.sender, 'ucx_perftest', ['127.0.0.1', '-p', port, ...args]), options);
    const [out] = await Promise.all([client.output, server.output]);
    const row = parseUcxFinal(out, [ITERATIONS, ...(s.kind === 'rtt' ? [LATENCY, LATENCY_AVERAGE] : [BANDWIDTH])]);
    if (row[ITERATIONS] !== iterations) {
      throw new Error(`ucx_perftest ran ${row[ITERATIONS]} iterations, asked for ${iterations}`);
    }
    const bytes = iterations * s.size;
    if (s.kind === 'bw') return { ops: iterations, bytes, elapsedNs: (bytes / (row[BANDWIDTH] * 2 ** 20)) * 1e9, reported: row };
    const roundTripNs = (usec: number): number => 2 * usec * 1000;
    return {
      ops: iterations,
      bytes,
      elapsedNs: roundTripNs(row[LATENCY_AVERAGE]) * iterations,
      medianOpNs: roundTripNs(row[LATENCY]),
      reported: row,
    };
  } finally {
    server.kill(); // a no-op once it exited; stops it when its client failed
  }
}
