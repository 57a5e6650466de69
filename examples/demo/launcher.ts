// `npm start`: launches worker processes on this machine that exchange tensors through
// the rendezvous for a number of steps, checks every byte, and prints a summary table.
// The workers find each other through an embedded directory the launcher fills in, or
// through Redis when REDIS_URL is set.
import { type ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import type { NodeRecord } from '../../src/directory';
import { type FromWorker, type ToWorker, type WorkerConfig, type WorkerStats } from './protocol';

const WORKERS = Number(process.env.RVMA_DEMO_WORKERS ?? 3);
const STEPS = Number(process.env.RVMA_DEMO_STEPS ?? 64);
const TENSORS_PER_STEP = 4;
const DEADLINE_MS = 55_000;

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL;
  console.log(`rvma demo: ${WORKERS} workers, ${STEPS} steps, ${TENSORS_PER_STEP} tensors per step and worker, ` +
    `directory: ${redisUrl ? `Redis at ${redisUrl}` : 'embedded'}`);
  const children: ChildProcess[] = [];
  const records: NodeRecord[] = [];
  const stats: WorkerStats[] = [];
  const timer = setTimeout(() => fail(`the demo did not finish within ${DEADLINE_MS / 1000} s`), DEADLINE_MS);
  function fail(message: string): never {
    for (const child of children) child.kill('SIGKILL');
    console.error(`demo failed: ${message}`);
    process.exit(1);
  }

  const began = performance.now();
  await new Promise<void>((resolve) => {
    for (let rank = 0; rank < WORKERS; rank++) {
      const child = fork(path.join(__dirname, 'worker.js'), { stdio: 'inherit' });
      children.push(child);
      child.on('exit', (code, signal) => {
        if (stats.length < WORKERS) fail(`worker ${rank} exited early (${signal ?? code})`);
      });
      child.on('message', (message: FromWorker) => {
        if (message.type === 'failed') fail(`worker ${rank}: ${message.message}`);
        if (message.type === 'ready') {
          records.push(message.record);
          if (records.length === WORKERS) {
            for (const c of children) c.send({ type: 'peers', records } satisfies ToWorker);
            for (const c of children) c.send({ type: 'go' } satisfies ToWorker);
          }
        }
        if (message.type === 'done') {
          stats.push(message.stats);
          if (stats.length === WORKERS) resolve();
        }
      });
      const config: WorkerConfig = {
        rank,
        workers: WORKERS,
        steps: STEPS,
        tensorsPerStep: TENSORS_PER_STEP,
        redisUrl,
        cluster: `demo-${process.pid}`,
      };
      child.send({ type: 'start', config } satisfies ToWorker);
    }
  });
  const seconds = (performance.now() - began) / 1000;
  clearTimeout(timer);
  // Every worker is done: let each close (and leave the directory) before it exits.
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.removeAllListeners('exit');
          const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
          child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          child.send({ type: 'stop' } satisfies ToWorker);
        }),
    ),
  );

  const tensors = stats.reduce((n, s) => n + s.tensors, 0);
  const bytes = stats.reduce((n, s) => n + s.bytes, 0);
  const mismatches = stats.reduce((n, s) => n + s.mismatches, 0);
  const latencies = stats.flatMap((s) => s.latenciesMs).sort((a, b) => a - b);
  const sum = (key: string) => stats.reduce((n, s) => n + (s.counters[key] ?? 0), 0);
  const transports = new Map<string, number>();
  for (const s of stats) for (const [t, n] of Object.entries(s.transports)) transports.set(t, (transports.get(t) ?? 0) + n);
  const rows: [string, string][] = [
    ['steps', String(STEPS)],
    ['tensors received', String(tensors)],
    ['bytes received', `${(bytes / 2 ** 20).toFixed(1)} MiB`],
    ['throughput', `${(bytes / 2 ** 20 / seconds).toFixed(1)} MiB/s over ${seconds.toFixed(1)} s (with startup)`],
    ['recv latency, step 1 (connecting)', `${Math.max(...stats.map((s) => s.firstStepMs)).toFixed(2)} ms at most`],
    [`recv latency p50, steps 2-${STEPS}`, `${percentile(latencies, 50).toFixed(2)} ms`],
    [`recv latency p99, steps 2-${STEPS}`, `${percentile(latencies, 99).toFixed(2)} ms`],
    ['requests / meta responses / re-requests', `${sum('requests')} / ${sum('metaResponses')} / ${sum('reRequests')}`],
    ['direct puts (cached meta)', String(sum('directPuts'))],
    ['pushed (no request)', String(sum('pushes'))],
    ['byte mismatches', String(mismatches)],
    ['connections between workers', [...transports].map(([t, n]) => `${t}: ${n}`).join(', ') || 'none'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  if (mismatches > 0 || tensors !== WORKERS * STEPS * TENSORS_PER_STEP) fail('some tensors were wrong or missing');
  console.log('every tensor arrived byte for byte');
}

void main();
