// The perftest row: ib_write_lat (round trip) or ib_write_bw (bandwidth, or message rate for
// the rate part) at the scenario's size and count, server and client both on the guest's rxe
// device, one pair per measurement.
import { spawnSync } from 'node:child_process';
import { type Measurement, type Scenario } from '../common/protocol';
import { portCycle, runServerClient } from '../common/server-client';
import { bandwidthMeasurement, roundTripMeasurement } from '../common/tool-measurement';
import { ADDRESS, DEVICE, GID_INDEX } from './config';
import { parseResultTable } from './perftest-output';

const TIMEOUT_MS = 120_000;
const LISTEN_TIMEOUT_MS = 20_000;
const nextPort = portCycle(18515, 500);

const BYTES = '#bytes';
const ITERATIONS = '#iterations';
const BW_AVERAGE = 'BW average[MB/sec]';
const TYPICAL = 't_typical[usec]'; // the median, of half round trips
const P99 = '99% percentile[usec]';
const AVERAGE = 't_avg[usec]';
const MSG_RATE = 'MsgRate[Mpps]'; // millions of messages/s

/** perftest's version, for the results record; throws when perftest is missing. */
export function perftestVersion(): string {
  // `--version` prints "Version: 6.06" and exits 1.
  const run = spawnSync('ib_write_bw', ['--version'], { encoding: 'utf8' });
  const version = /Version:\s*(\S+)/.exec(run.stdout ?? '')?.[1];
  if (!version) throw new Error(`ib_write_bw --version: ${run.error?.message ?? (run.stdout + run.stderr).trim()} (is perftest installed?)`);
  return version;
}

interface Run {
  tool: string;
  args: string[];
  required: string[];
}

function commonArgs(s: Scenario): string[] {
  return ['-d', DEVICE, '-x', String(GID_INDEX), '-s', String(s.size), '-n', String(s.count), '-F'];
}

/** ib_write_bw with `window` writes in flight; its bandwidth (required) or message rate. */
function bandwidthRun(s: Scenario, required: string): Run {
  return { tool: 'ib_write_bw', args: [...commonArgs(s), '-t', String(s.window)], required: [required] };
}

function toolFor(s: Scenario): Run {
  if (s.kind === 'rtt') return { tool: 'ib_write_lat', args: commonArgs(s), required: [TYPICAL, P99, AVERAGE] };
  return bandwidthRun(s, BW_AVERAGE);
}

/** perftest's own figures as a Measurement: MiB/s for bandwidth, 2 x its half round trips for rtt. */
function measurementOf(s: Scenario, row: Record<string, number>): Measurement {
  const bytes = s.count * s.size;
  if (s.kind === 'bw') return bandwidthMeasurement(s.count, bytes, row[BW_AVERAGE], row);
  return roundTripMeasurement(s.count, bytes, { average: row[AVERAGE], median: row[TYPICAL], p99: row[P99] }, row);
}

export async function runPerftest(s: Scenario): Promise<Measurement> {
  return measurementOf(s, await runPair(s, toolFor(s)));
}

/**
 * In the guest, ib_write_bw at 8 B now and then prints a result row of zeros (about 1 run in 10,
 * with its client pinned to one CPU or not): such a run is run again, twice at most.
 */
const ZERO_ROW_RETRIES = 2;

/** The rate part's perftest row: ib_write_bw's own message rate, from its MsgRate column. */
export async function runPerftestRate(s: Scenario): Promise<Measurement> {
  for (let attempt = 0; ; attempt++) {
    const row = await runPair(s, bandwidthRun(s, MSG_RATE));
    if (row[MSG_RATE] > 0) {
      return { ops: s.count, bytes: s.count * s.size, elapsedNs: (s.count / (row[MSG_RATE] * 1e6)) * 1e9, reported: row };
    }
    if (attempt === ZERO_ROW_RETRIES) throw new Error(`ib_write_bw reported no message rate ${attempt + 1} times: ${JSON.stringify(row)}`);
    console.log(`  ib_write_bw printed a result row of zeros; running it again`);
  }
}

/** Server and client of one run; the client's result row, checked to be of the scenario's count and size. */
async function runPair(s: Scenario, { tool, args, required }: Run): Promise<Record<string, number>> {
  const port = nextPort();
  const withPort = [...args, '-p', String(port)];
  const out = await runServerClient({
    server: [tool, withPort],
    client: [tool, [...withPort, ADDRESS]],
    port,
    timeoutMs: TIMEOUT_MS,
    listenTimeoutMs: LISTEN_TIMEOUT_MS,
  });
  const row = parseResultTable(out, [BYTES, ITERATIONS, ...required]);
  if (row[BYTES] !== s.size || row[ITERATIONS] !== s.count) {
    throw new Error(`${tool} ran ${row[ITERATIONS]} x ${row[BYTES]} B, asked for ${s.count} x ${s.size} B`);
  }
  return row;
}
