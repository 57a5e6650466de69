// A ring of endpoints in one process (loopback), run in a child process with no timer of its own
// (test/fixtures/one-process-ring.js): frames forwarded from the delivery of the frame before
// reach the next endpoint without waiting for another wake-up, and a process whose only pending
// work is a ring wait (recv, control, around, a send waiting for credit) stays alive for it.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { SANITIZED } from '../helpers/transports';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'one-process-ring.js');
// A bound on a hang, not a speed limit: the frames case takes well under a second here.
const KILL_AFTER_MS = SANITIZED ? 120_000 : 30_000;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
}

function run(what: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [FIXTURE, what], { timeout: KILL_AFTER_MS, killSignal: 'SIGKILL' }, (error, stdout) => {
      const e = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout });
    });
  });
}

describe('a ring in one process, with nothing else keeping it alive', () => {
  test('3000 stop-and-wait frames of 16 KiB around 3 ranks: every one comes back, and the process exits', async () => {
    expect(await run('frames')).toEqual({ code: 0, signal: null, stdout: 'done 3000 frames\n' });
  }, KILL_AFTER_MS + 10_000);

  test.each([
    ['recv', 'recvPrev() waiting for a frame', 'done recv 7\n'],
    ['control', 'control() waiting for a record', 'done control hi\n'],
    ['around', 'around() waiting for its acknowledgement', 'done around\n'],
    ['credit', 'sendNext() waiting for a credit', 'done credit 3\n'],
  ])('%s: %s keeps the process alive until it completes', async (what, _how, expected) => {
    expect(await run(what)).toEqual({ code: 0, signal: null, stdout: expected });
  }, KILL_AFTER_MS + 10_000);
});
