// The UCX row: ucx_perftest over UCX_TLS=posix,cma,self (same host), tag_lat for round trips
// and tag_bw with `window` sends in flight, one server/client pair per measurement.
import { type Placement } from '../common/placement';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { portCycle } from '../common/server-client';
import { bandwidthMeasurement, roundTripMeasurement } from '../common/tool-measurement';
import { runUcxPair } from '../common/ucx';

export const UCX_TLS = 'posix,cma,self';
const TIMEOUT_MS = 60_000;
const nextPort = portCycle(14337, 500);
// Two polling processes on one CPU take turns a scheduler slice at a time (bench:shm, same
// placement: 4 ms per tag_lat message, 2 ms per 64 KiB tag_bw send), so they get fewer iterations.
export const ONE_CPU_POLL_ITERATIONS = 500;
const ONE_CPU_POLL_WARMUP = 20;

const LATENCY = 'latency (usec) 50.0%ile'; // the median of half round trips
const LATENCY_AVERAGE = 'latency (usec) overall';
const BANDWIDTH = 'bandwidth (MB/s) overall';

function spinsOnOneCpu(v: Variant, placement: Placement | undefined): boolean {
  return placement !== undefined && placement.receiver === placement.sender && !(v.args ?? []).includes('sleep');
}

export async function runUcx(v: Variant, s: Scenario, placement: Placement | undefined): Promise<Measurement> {
  const few = spinsOnOneCpu(v, placement);
  const iterations = few ? Math.min(s.count, ONE_CPU_POLL_ITERATIONS) : s.count;
  const warmup = few ? Math.min(s.warmup, ONE_CPU_POLL_WARMUP) : s.warmup;
  const test = s.kind === 'rtt' ? ['-t', 'tag_lat'] : ['-t', 'tag_bw', '-O', String(s.window)];
  const row = await runUcxPair({
    tls: UCX_TLS,
    port: nextPort(),
    args: [...test, '-s', String(s.size), '-w', String(warmup), ...(v.args ?? [])],
    iterations,
    required: s.kind === 'rtt' ? [LATENCY, LATENCY_AVERAGE] : [BANDWIDTH],
    placement,
    timeoutMs: TIMEOUT_MS,
  });
  const bytes = iterations * s.size;
  if (s.kind === 'bw') return bandwidthMeasurement(iterations, bytes, row[BANDWIDTH], row);
  return roundTripMeasurement(iterations, bytes, { average: row[LATENCY_AVERAGE], median: row[LATENCY] }, row);
}
