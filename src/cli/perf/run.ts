// `rvma perf`: the server's loop until Ctrl-C, or the client's tests with a progress bar, then
// the table (or JSON) and, with --out, the results file.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type ProgressMode } from '../../index';
import { columns } from '../columns';
import { ProgressBar } from '../progress-bar';
import { type PerfReport, type PerfResult, perfClient } from './client';
import { PERF_TESTS, type PerfTest } from './protocol';
import { perfServer } from './server';

export interface PerfOptions {
  server?: boolean;
  listen?: string;
  provider: 'auto' | 'tcp' | 'shm' | 'verbs';
  thread?: boolean;
  once?: boolean;
  tests: string;
  size: number[];
  iterations: number;
  warmup: number;
  window: number;
  timeout: number;
  json?: boolean;
  out?: string;
  progress: boolean;
}

const DEFAULT_LISTEN = 'tcp://0.0.0.0:18515';

function testsOf(list: string): PerfTest[] {
  const tests = list.split(',').map((t) => t.trim());
  for (const t of tests) if (!(PERF_TESTS as readonly string[]).includes(t)) throw new Error(`--tests: unknown test "${t}" (known: ${PERF_TESTS.join(', ')})`);
  return tests as PerfTest[];
}

export async function runPerf(address: string | undefined, o: PerfOptions): Promise<void> {
  const progress: ProgressMode = o.thread ? 'thread' : 'loop';
  if (o.server) {
    if (address !== undefined) throw new Error('give an address to connect to, or --server, not both');
    const stop = new AbortController();
    const end = (): void => stop.abort();
    process.once('SIGINT', end);
    process.once('SIGTERM', end);
    try {
      await perfServer({ listen: o.listen ?? DEFAULT_LISTEN, provider: o.provider, progress, once: o.once, signal: stop.signal, log: (line) => console.log(line) });
    } finally {
      process.off('SIGINT', end);
      process.off('SIGTERM', end);
    }
    return;
  }
  if (address === undefined) throw new Error('give the server\'s address (rvma perf tcp://HOST:PORT), or --server');
  const bar = new ProgressBar(o.progress && !o.json && Boolean(process.stdout.isTTY));
  const tests = testsOf(o.tests);
  const report = await perfClient(address, {
    provider: o.provider,
    progress,
    tests,
    sizes: o.size,
    iterations: o.iterations,
    warmup: o.warmup,
    window: o.window,
    timeoutMs: o.timeout,
    progressed: (done, total, what) => bar.update({ done, total, repetition: 1, repetitions: 1, scenario: what, row: address }),
  });
  bar.finish();
  if (o.out) {
    fs.mkdirSync(o.out, { recursive: true });
    const file = path.join(o.out, `perf-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    fs.writeFileSync(file, `${JSON.stringify({ address, options: { ...o, tests }, ...report }, null, 2)}\n`);
    if (!o.json) console.log(`results: ${file}`);
  }
  console.log(o.json ? JSON.stringify(report, null, 2) : formatPerf(address, report, o));
}

const n = (v: number | undefined, digits: number): string => (v === undefined ? '' : v.toFixed(digits));

export function formatPerf(address: string, report: PerfReport, o: Pick<PerfOptions, 'iterations' | 'warmup' | 'window'>): string {
  const rows = [['test', 'size B', 'iterations', 'min µs', 'median µs', 'p99 µs', 'MiB/s', 'puts/s']];
  for (const r of report.results as PerfResult[]) {
    rows.push([r.test, String(r.size), String(r.iterations), n(r.minUs, 2), n(r.medianUs, 2), n(r.p99Us, 2), n(r.mibPerSecond, 1), n(r.putsPerSecond, 0)]);
  }
  return [
    `rvma perf to ${address}: server node ${report.server.nodeId} (pid ${report.server.pid} on ${report.server.host}, ${report.server.provider} provider)`,
    columns(rows)
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n'),
    `lat: one put in flight, echoed back: half the round trip. bw: ${o.window} puts in flight. rate: counted 'append' puts, at most ${o.window} unsettled. raw: raw writes, ${o.window} in flight. ${o.warmup} untimed first; the server confirmed every put.`,
  ].join('\n');
}
