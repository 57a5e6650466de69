// The plain C socket baseline: compiles bench/c/sockbench.c with `cc -O2` into a temporary
// directory and runs one receiver/sender pair of it per measurement.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runProgram } from '../common/process';
import { Measurement, Scenario } from '../common/protocol';
import { Placement, pinned } from './placement';

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

export async function runSockbench(bin: string, s: Scenario, placement: Placement | undefined): Promise<Measurement> {
  let sent: Promise<string> | undefined;
  let firstLine = true;
  const received = runProgram(...pinned(placement?.receiver, bin, ['recv']), {
    timeoutMs: TIMEOUT_MS,
    onLine: (line) => {
      const port = firstLine ? /^PORT (\d+)$/.exec(line)?.[1] : undefined;
      firstLine = false;
      if (!port) return;
      const args = ['send', '127.0.0.1', port, s.kind, s.size, s.count, s.warmup, s.window].map(String);
      sent = runProgram(...pinned(placement?.sender, bin, args), { timeoutMs: TIMEOUT_MS }).output;
    },
  });
  const receiverOut = await received.output;
  if (!sent) throw new Error('sockbench recv printed no port');
  const m = JSON.parse((await sent).trim()) as Measurement;
  const got = JSON.parse(receiverOut.trim().split('\n').pop()!) as { messages: number; bytes: number };
  const expected = s.warmup + s.count;
  if (got.messages !== expected || got.bytes !== expected * s.size) {
    throw new Error(`sockbench receiver counted ${got.messages} messages, expected ${expected}`);
  }
  return m;
}
