// The plain C socket baseline: compiles bench/c/sockbench.c with `cc -O2` into a temporary
// directory and runs one receiver/sender pair of it per measurement.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Placement, pinned } from './placement';
import { Measurement, Scenario } from './protocol';

const TIMEOUT_MS = 30_000;

/** The compiled program's path (remove its directory when done), or an Error saying why there is none. */
export function compileSockbench(root: string): string | Error {
  const source = path.join(root, 'bench', 'c', 'sockbench.c');
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-sockbench-')), 'sockbench');
  try {
    execFileSync('cc', ['-O2', '-o', out, source], { stdio: ['ignore', 'ignore', 'pipe'] });
    return out;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return new Error(`cc -O2 ${source} failed${stderr ? `: ${stderr}` : ''}`);
  }
}

/** Runs bin to completion; onFirstLine sees its first stdout line as soon as it is printed. */
function runProcess(
  cpus: string | undefined,
  bin: string,
  args: string[],
  onFirstLine?: (line: string) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const [command, argv] = pinned(cpus, bin, args);
    const proc = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let firstLine = false;
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (!firstLine && out.includes('\n')) {
        firstLine = true;
        onFirstLine?.(out.slice(0, out.indexOf('\n')));
      }
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), TIMEOUT_MS);
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`sockbench ${args[0]} failed (${signal ?? code})`));
    });
  });
}

export async function runSockbench(bin: string, s: Scenario, placement: Placement | undefined): Promise<Measurement> {
  let sent: Promise<string> | undefined;
  const received = runProcess(placement?.receiver, bin, ['recv'], (line) => {
    const port = /^PORT (\d+)$/.exec(line)?.[1];
    if (!port) return;
    const args = ['send', '127.0.0.1', port, s.kind, s.size, s.count, s.warmup, s.window].map(String);
    sent = runProcess(placement?.sender, bin, args);
    sent.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
  });
  const receiverOut = await received;
  if (!sent) throw new Error('sockbench recv printed no port');
  const m = JSON.parse((await sent).trim()) as Measurement;
  const got = JSON.parse(receiverOut.trim().split('\n').pop()!) as { messages: number; bytes: number };
  const expected = s.warmup + s.count;
  if (got.messages !== expected || got.bytes !== expected * s.size) {
    throw new Error(`sockbench receiver counted ${got.messages} messages, expected ${expected}`);
  }
  return m;
}
