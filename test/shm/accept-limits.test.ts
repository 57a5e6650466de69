// Out of descriptors, an shm listener rests instead of spinning (as tcp's does:
// test/tcp/accept-limits.test.ts) and takes peers again once descriptors free up. The idle
// connections come from a small C program (test/fixtures/shm-idle.c): Node cannot open the
// SOCK_SEQPACKET sockets shm listens on.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { startAgent, trackChildren } from '../helpers/children';
import { expectRestingAtLimit, usage } from '../helpers/usage';

jest.setTimeout(90_000);
const endpoints = trackEndpoints();
const children = trackChildren();

let dir: string;
let shmIdle: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-shm-idle-'));
  shmIdle = path.join(dir, 'shm-idle');
  execFileSync('cc', ['-O2', '-o', shmIdle, path.join(__dirname, '..', 'fixtures', 'shm-idle.c')]);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const holders: ChildProcess[] = [];
afterEach(() => {
  for (const h of holders.splice(0)) h.kill('SIGKILL');
});

/** Opens `count` idle connections to shm://name; resolves with how many connected. */
function openIdle(name: string, count: number): Promise<{ holder: ChildProcess; opened: number }> {
  const holder = spawn(shmIdle, [name, String(count)], { stdio: ['pipe', 'pipe', 'inherit'] });
  holders.push(holder);
  return new Promise((resolve, reject) => {
    let out = '';
    holder.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /open (\d+)\n/.exec(out);
      if (m) resolve({ holder, opened: Number(m[1]) });
    });
    holder.on('exit', (code) => reject(new Error(`shm-idle exited (${code}) before it said how many it opened`)));
  });
}

describe.each(PROGRESS_MODES)('an shm listener under pressure (%s progress)', (progress) => {
  test('out of descriptors, the accept loop rests instead of spinning, and accepts again once they free up', async () => {
    const name = uniqueNodeId('victim');
    // The child may hold 64 descriptors: idle connections use up the rest.
    const victim = await startAgent(
      children,
      'victim',
      { progress, provider: 'shm', listen: `shm://${name}`, shm: { connectTimeoutMs: 60_000 } },
      ['prlimit', '--nofile=64:64', '--'],
    );
    await victim.child.request({ cmd: 'open', vaddr: VADDR.toString(), options: { epoch: 'bytes', threshold: '4' } });
    await victim.child.request({ cmd: 'post', vaddr: VADDR.toString(), size: 4 });
    const before = usage(victim);
    const want = 64 - before.fds + 20;
    const { holder, opened } = await openIdle(name, want);
    expect(opened).toBe(want); // those past the limit wait in the listener's backlog
    await expectRestingAtLimit(victim, 64);

    holder.stdin!.end(); // the holder exits: every idle connection closes
    await new Promise((r) => holder.once('exit', r));
    const sender = await endpoints.create({ progress, provider: 'shm' });
    await sender.put(victim.address, VADDR, Buffer.from('abcd'), { timeout: 20_000 });
    const done = await victim.child.request({ cmd: 'next', vaddr: VADDR.toString() });
    expect(done.bytes).toBe(4);
  });
});
