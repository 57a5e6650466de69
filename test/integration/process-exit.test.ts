// A process whose endpoints have nothing pending must exit by itself, cleanly. Runs a real
// child process against the compiled package (dist/), so it is skipped when that is not built.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { PROGRESS_MODES } from '../helpers/endpoints';

const DIST = path.resolve(__dirname, '..', '..', 'dist', 'src', 'index.js');
const built = existsSync(DIST);
const SKIP_NOTE = ' [skipped: dist/src is not built; run `npm run build`]';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `body` (an async function body with Endpoint in scope) in a child node process. */
function runChild(body: string): Promise<Exit> {
  const script = `const { Endpoint } = require(${JSON.stringify(DIST)});\n(async () => {\n${body}\n})();`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { timeout: 5000, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      const e = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
      resolve({
        code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
        signal: e?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}

/** A receiver and a sender exchange one put; `closing` decides what is closed before the end. */
function exchange(progress: string, closing: string): string {
  return `
    const receiver = await Endpoint.create({ progress: '${progress}' });
    const sender = await Endpoint.create({ progress: '${progress}' });
    const mailbox = receiver.openMailbox(0x10000n);
    mailbox.post(4);
    mailbox.post(4); // still posted at exit: a posted buffer is not something pending
    await sender.put(receiver, 0x10000n, Buffer.from([1, 2, 3, 4]), { offset: 0 });
    const done = await mailbox.next({ timeout: 2000 });
    ${closing}
    process.stdout.write('bytes=' + done.bytes);`;
}

const exitTest = built ? test : test.skip;
const suffix = built ? '' : SKIP_NOTE;

describe.each(PROGRESS_MODES)('process exit (%s progress)', (progress) => {
  exitTest(`exits by itself once endpoints are closed${suffix}`, async () => {
    const exit = await runChild(exchange(progress, 'await sender.close(); await receiver.close();'));
    expect(exit).toMatchObject({ code: 0, signal: null, stdout: 'bytes=4' });
  });

  exitTest(`exits by itself with one idle endpoint left open${suffix}`, async () => {
    const exit = await runChild(`
      const endpoint = await Endpoint.create({ progress: '${progress}' });
      const mailbox = endpoint.openMailbox(0x10000n, { epoch: 'ops' });
      mailbox.post(4);
      await endpoint.put(endpoint, 0x10000n, Buffer.from([5]), { offset: 0 });
      const done = await mailbox.next({ timeout: 2000 });
      process.stdout.write('bytes=' + done.bytes);`);
    expect(exit).toMatchObject({ code: 0, signal: null, stdout: 'bytes=1' });
  });

  // Two endpoints left open once aborted teardown (SIGABRT in napi_release_threadsafe_function
  // from ~EndpointWrap); this guards against its return.
  exitTest(`exits by itself, cleanly, with a sender and a receiver left open${suffix}`, async () => {
    const exit = await runChild(exchange(progress, ''));
    expect(exit).toMatchObject({ code: 0, signal: null, stdout: 'bytes=4' });
  });
});
