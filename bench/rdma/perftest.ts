// The perftest row: ib_write_lat (round trip) or ib_write_bw (bandwidth) at the scenario's
// size and count, server and client both on the guest's rxe device, one pair per measurement.
import { spawnSync } from 'node:child_process';
import { waitListening } from '../common/listening';
import { runProgram } from '../common/process';
import { Measurement, Scenario } from '../common/protocol';
import { ADDRESS, DEVICE, GID_INDEX } from './config';
import { parseResultTable } from './perftest-output';

const TIMEOUT_MS = 120_000;
const LISTEN_TIMEOUT_MS = 20_000;
// A fresh TCP port for each pair's setup exchange, so a previous one in TIME_WAIT never matters.
const FIRST_PORT = 18515;
const PORTS = 500;
let nextPort = 0;

const BYTES = '#bytes';
const ITERATIONS = '#iterations';
const BW_AVERAGE = 'BW average[MB/sec]'; // perftest's MB are MiB (2^20 bytes)
const TYPICAL = 't_typical[usec]'; // the median, of half round trips
const P99 = '99% percentile[usec]';
const AVERAGE = 't_avg[usec]';

/** perftest's version, for the results record; throws when perftest is missing. */
export function perftestVersion(): string {
  // `--version` prints "Version: 6.06" and exits 1.
  const run = spawnSync('ib_write_bw', ['--version'], { encoding: 'utf8' });
  const version = /Version:\s*(\S+)/.exec(run.stdout ?? '')?.[1];
  if (!version) throw new Error(`ib_write_bw --version: ${run.error?.message ?? (run.stdout + run.stderr).trim()} (is perftest installed?)`);
  return version;
}

function toolFor(s: Scenario): { tool: string; args: string[]; required: string[] } {
  const common = ['-d', DEVICE, '-x', String(GID_INDEX), '-s', String(s.size), '-n', String(s.count), '-F'];
  if (s.kind === 'rtt') return { tool: 'ib_write_lat', args: common, required: [TYPICAL, P99, AVERAGE] };
  return { tool: 'ib_write_bw', args: [...common, '-t', String(s.window)], required: [BW_AVERAGE] };
}

/** perftest's own figures as a Measurement: MiB/s for bandwidth, 2 x its half round trips for rtt. */
function measurementOf(s: Scenario, row: Record<string, number>): Measurement {
  const bytes = s.count * s.size;
  if (s.kind === 'bw') {
    return { ops: s.count, bytes, elapsedNs: (bytes / (row[BW_AVERAGE] * 2 ** 20)) * 1e9, reported: row };
  }
  const roundTripNs = (usec: number): number => 2 * usec * 1000;
  return {
    ops: s.count,
    bytes,
    elapsedNs: roundTripNs(row[AVERAGE]) * s.count,
    medianOpNs: roundTripNs(row[TYPICAL]),
    p99OpNs: roundTripNs(row[P99]),
    reported: row,
  };
}

export async function runPerftest(s: Scenario): Promise<Measurement> {
  const { tool, args, required } = toolFor(s);
  const port = FIRST_PORT + (nextPort++ % PORTS);
  const withPort = [...args, '-p', String(port)];
  const server = runProgram(tool, withPort, { timeoutMs: TIMEOUT_MS });
  try {
    await waitListening(port, LISTEN_TIMEOUT_MS, server.output);
    const client = runProgram(tool, [...withPort, ADDRESS], { timeoutMs: TIMEOUT_MS });
    const [out] = await Promise.all([client.output, server.output]);
    const row = parseResultTable(out, [BYTES, ITERATIONS, ...required]);
    if (row[BYTES] !== s.size || row[ITERATIONS] !== s.count) {
      throw new Error(`${tool} ran ${row[ITERATIONS]} x ${row[BYTES]} B, asked for ${s.count} x ${s.size} B`);
    }
    return measurementOf(s, row);
  } finally {
    server.kill(); // a no-op once it exited; stops it when its client failed
  }
}
