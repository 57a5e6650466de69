// The plain C socket baseline: compiles bench/c/sockbench.c with `cc -O2` into a temporary
// directory and runs one receiver/sender pair of it per measurement.
import { compileC } from '../common/compile';
import { type Placement, pinned } from '../common/placement';
import { runProgram } from '../common/process';
import { type Measurement, type Scenario } from '../common/protocol';

const TIMEOUT_MS = 30_000;

/** The compiled program's path (remove it with removeCompiled), or an Error saying why there is none. */
export function compileSockbench(root: string): string | Error {
  return compileC(root, 'sockbench');
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
