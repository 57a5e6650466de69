// The C TCP ring: bench/c/ringbench.c, three processes per measurement (rank 0 runs the scenario,
// ranks 1 and 2 forward), pinned like the Node rings' ranks. Each prints its port once listening;
// once all three have, each is told the next rank's port on stdin, so none connects too early.
import { spawn } from 'node:child_process';
import { compileC } from '../common/compile';
import { pinned } from '../common/placement';
import { type Measurement, type Scenario } from '../common/protocol';
import { DATA_BYTES, HEADER_BYTES, RANKS } from './config';

const TIMEOUT_MS = 60_000;
const TAIL_LINES = 15;

/** The compiled program's path (remove it with removeCompiled), or an Error saying why there is none. */
export function compileRingbench(root: string): string | Error {
  return compileC(root, 'ringbench');
}

interface Rank {
  port: Promise<number>;
  /** stdout once the rank exited 0. */
  output: Promise<string>;
  tell(nextPort: number): void;
  kill(): void;
}

function startRank(bin: string, rank: number, args: string[], cpus: string): Rank {
  const proc = spawn(...pinned(cpus, bin, args), { stdio: ['pipe', 'pipe', 'pipe'] });
  const name = `ringbench rank ${rank}`;
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk: string) => (err += chunk));
  // A rank that died before reading its port closes stdin: its exit says why, not EPIPE.
  proc.stdin.on('error', () => undefined);
  const output = new Promise<string>((resolve, reject) => {
    proc.on('error', (error) => reject(new Error(`${name}: ${error.message}`)));
    proc.on('close', (code, signal) => {
      if (code === 0) return resolve(out);
      const text = [err, out].map((t) => t.trimEnd().split('\n').slice(-TAIL_LINES).join('\n')).filter(Boolean).join('\n');
      reject(new Error(`${name} failed (${signal ?? `exit ${code}`})${text ? `:\n${text}` : ''}`));
    });
  });
  const port = new Promise<number>((resolve, reject) => {
    proc.stdout.on('data', (chunk: string) => {
      out += chunk;
      const m = /^PORT (\d+)\n/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    output.then(() => reject(new Error(`${name} exited without a port`)), reject);
  });
  output.catch(() => undefined); // measure() awaits it; this only keeps an early failure from going unhandled
  port.catch(() => undefined);
  return {
    port,
    output,
    tell: (nextPort) => proc.stdin.end(`${nextPort}\n`),
    kill: () => proc.kill('SIGKILL'),
  };
}

/** One measurement: rank 0's figures, the forwarders' CPU added; fails unless each forwarded every frame. */
export async function runCRing(bin: string, s: Scenario, cpus: string[]): Promise<Measurement> {
  const sizes = [HEADER_BYTES, DATA_BYTES].map(String);
  const args = (rank: number): string[] =>
    rank === 0 ? ['origin', ...sizes, s.id, ...[s.count, s.warmup, s.window].map(String)] : ['forward', ...sizes];
  const ranks = [...Array(RANKS).keys()].map((r) => startRank(bin, r, args(r), cpus[r]));
  const killAll = (): void => ranks.forEach((r) => r.kill());
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`C TCP ring timed out after ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  try {
    const run = async (): Promise<string[]> => {
      const ports = await Promise.all(ranks.map((r) => r.port));
      ranks.forEach((r, i) => r.tell(ports[(i + 1) % RANKS]));
      return Promise.all(ranks.map((r) => r.output));
    };
    const outputs = await Promise.race([run(), timeout]);
    const last = (text: string): string => text.trim().split('\n').pop()!;
    const m = JSON.parse(last(outputs[0])) as Measurement;
    const expected = s.warmup + s.count;
    const forwarded = outputs.slice(1).map((o) => JSON.parse(last(o)) as { frames: number; cpuNs: number; wakeups: number });
    forwarded.forEach((f, i) => {
      if (f.frames !== expected) throw new Error(`C ring rank ${i + 1} forwarded ${f.frames} frames, expected ${expected}`);
    });
    return { ...m, receiverCpuNs: forwarded.reduce((sum, f) => sum + f.cpuNs, 0), receiverWakeups: forwarded.reduce((sum, f) => sum + f.wakeups, 0) };
  } finally {
    clearTimeout(timer);
    // All have exited after a success; after a failure or the timeout none may outlive it.
    killAll();
  }
}
