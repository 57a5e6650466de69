// The verbs provider between two Soft-RoCE devices, one in each guest of scripts/rdma-vm/pair.sh
// (`npm run test:rdma:pair`): RoCE v2 packets cross a wire that drops a share of them on request,
// so rxe's retransmissions are what makes the puts arrive. An endpoint runs here (the first
// guest); agents (test/fixtures/agent.js) run in the second. Elsewhere this file reports a skip.
import { spawn } from 'node:child_process';
import { type Endpoint, type ProgressMode, type RvmaError } from '../../src';
import { CliProcess, rvma } from '../helpers/cli';
import { RECORD_BYTES, RecordTally } from '../helpers/counted';
import { type Agent, seededBytes, sha256, startAgent, trackChildren } from '../helpers/children';
import { trackEndpoints } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { IN_PEER, PEER_ADDR, describePair, setWire, wireStats } from '../helpers/pair';
import { EAGER_MAX, rnrNaksSent, verbsEndpoint } from '../helpers/verbs';

const VADDR = 0x50000n;
const WAIT = { timeout: 120_000 };
const SIZES = [1024, EAGER_MAX + 1, 256 * 1024]; // eager; pulled (RDMA_READ) from just past eager

describePair('verbs between two guests', () => {
  jest.setTimeout(300_000);
  const children = trackChildren('each');
  const endpoints = trackEndpoints();
  afterEach(() => setWire({ loss: 0 }));

  const far = (label: string, progress: ProgressMode = 'loop', extra: object = {}): Promise<Agent> =>
    startAgent(children, label, { provider: 'verbs', listen: `rdma://${PEER_ADDR}:0`, progress, ...extra }, IN_PEER);

  /** Puts every size from `local` into the far agent and back; bytes equal both ways. */
  async function bothWays(local: Endpoint, agent: Agent): Promise<void> {
    const v = VADDR.toString();
    await agent.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
    const mailbox = local.openMailbox(VADDR, { epoch: 'ops', threshold: 1 });
    for (const [i, size] of SIZES.entries()) {
      const data = seededBytes(size, i);
      await agent.child.request({ cmd: 'post', vaddr: v, size });
      await local.put(agent.address, VADDR, data, WAIT);
      const there = await agent.child.request({ cmd: 'next', vaddr: v, timeout: WAIT.timeout }, WAIT.timeout + 10_000);
      expect([there.bytes, there.sha256]).toEqual([size, sha256(data)]);

      mailbox.post(size);
      await agent.child.request({ cmd: 'put', target: local.address, vaddr: v, size, seed: 100 + i, timeout: WAIT.timeout }, WAIT.timeout + 10_000);
      const here = await mailbox.next(WAIT);
      expect([here.bytes, sha256(here.buffer.subarray(0, here.bytes))]).toEqual([size, sha256(seededBytes(size, 100 + i))]);
    }
  }

  test.each([
    [0, 0, 'loop'],
    [1, 0, 'loop'],
    [1, 2, 'thread'],
  ] as const)('%i%% of frames lost, %i%% reordered, %s progress: eager and pulled puts both ways, bytes equal', async (loss, reorder, progress) => {
    // Over a lossy wire a 256 KiB read can take rxe several retransmission timeouts, and what a
    // side sends meanwhile waits behind it; and rdma_cm sends a lost connect message again only
    // after about 4 s. Either can outlast the defaults (5 s of silence, 5 s to connect) that
    // call a peer lost or unreachable (docs/rdma-vm.md).
    const verbs = loss > 0 ? { verbs: { peerTimeoutMs: 30_000, connectTimeoutMs: 30_000 } } : {};
    const local = await verbsEndpoint(endpoints, progress, verbs);
    const agent = await far('far', progress, verbs);
    const before = wireStats();
    await setWire({ loss, reorder });
    await bothWays(local, agent).catch((e: Error) => {
      throw new Error(`${e.message}\n--- the far agent's stderr ---\n${agent.child.stderr}`);
    });
    const after = wireStats();
    if (loss > 0) expect(after.dropped).toBeGreaterThan(before.dropped);
    if (reorder > 0) expect(after.reordered).toBeGreaterThan(before.reordered);
  });

  test('1% of frames lost: 2 far senders, 2,000 counted appends each into 8 receive buffers shared here, each lands once, counters exact', async () => {
    // 8 buffers in the shared receive queue: the senders run it dry, and their devices retry
    // (RNR) across the wire until this side posts them again.
    const local = await verbsEndpoint(endpoints, 'loop', { verbs: { receiveDepth: 8 } });
    const senders = await Promise.all([far('sender0'), far('sender1')]);
    const count = 2000;
    const total = senders.length * count;
    const mailbox = local.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(total) });
    mailbox.post(total * RECORD_BYTES);
    await Promise.all(senders.map((a) => a.child.request({ cmd: 'connect', address: local.address }, 60_000)));
    const rnrBefore = rnrNaksSent();
    await setWire({ loss: 1 });
    const sent = await Promise.all(
      senders.map((a, s) =>
        a.child.request({ cmd: 'countedRecords', target: local.address, vaddr: VADDR.toString(), sender: s, count, window: 64, timeout: 180_000 }, 200_000),
      ),
    );
    for (const r of sent) expect([r.issued, r.completed, r.failed, r.codes]).toEqual([count, count, 0, {}]);
    const done = await mailbox.next(WAIT);
    expect([done.ops, done.bytes]).toEqual([total, total * RECORD_BYTES]);
    const tally = new RecordTally(senders.length, count);
    tally.add(done.buffer, total * RECORD_BYTES);
    expect([tally.total, tally.duplicates, tally.corrupt, tally.missing(0), tally.missing(1)]).toEqual([total, 0, 0, 0, 0]);
    expect(rnrNaksSent()).toBeGreaterThan(rnrBefore);
  });

  test('raw writes from the far guest into a region lent here (RDMA_WRITE), bytes equal', async () => {
    const local = await verbsEndpoint(endpoints, 'loop');
    const agent = await far('writer');
    const region = local.registerRegion(512 * 1024);
    const notices = region.next(WAIT);
    await agent.child.request({ cmd: 'rawWrite', target: local.address, key: region.key.toString(), offset: 4096, size: 300 * 1024, seed: 7, timeout: WAIT.timeout }, WAIT.timeout + 10_000);
    await notices;
    expect(sha256(region.buffer.subarray(4096, 4096 + 300 * 1024))).toBe(sha256(seededBytes(300 * 1024, 7)));
    expect(region.buffer.subarray(0, 4096).every((b) => b === 0)).toBe(true);
  });

  test('authentication across the guests: the same secret connects, another is refused (ERR_RVMA_AUTH)', async () => {
    const secret = 'a secret both guests were given';
    const agent = await far('auth', 'loop', { auth: { secret } });
    const friend = await verbsEndpoint(endpoints, 'loop', { auth: { secret } });
    await agent.child.request({ cmd: 'open', vaddr: VADDR.toString(), options: { epoch: 'ops', threshold: 1 } });
    await agent.child.request({ cmd: 'post', vaddr: VADDR.toString(), size: 64 });
    await friend.put(agent.address, VADDR, Buffer.alloc(64, 1), WAIT);
    const stranger = await verbsEndpoint(endpoints, 'loop', { auth: { secret: 'a secret the far guest never heard' } });
    await expectRejects(stranger.put(agent.address, VADDR, Buffer.alloc(64, 2), WAIT), 'ERR_RVMA_AUTH');
  });

  test('rvma perf between the guests: every test reported, every put confirmed by the server', async () => {
    const server = new CliProcess(['perf', '--server', '--once', '--provider', 'verbs', '--listen', `rdma://${PEER_ADDR}:18515`], IN_PEER);
    try {
      const address = /listening at (\S+)/.exec(await server.line('the server listening', (l) => l.includes('listening at'), 60_000))![1];
      expect(address).toBe(`rdma://${PEER_ADDR}:18515`);
      const result = await rvma(['perf', address, '--provider', 'verbs', '--json', '-s', '8,64k,1m', '-n', '200', '-w', '20'], { timeoutMs: 240_000 });
      expect([result.status, result.stderr]).toEqual([0, '']);
      const report = JSON.parse(result.stdout) as { results: { test: string; size: number; iterations: number }[] };
      expect(report.results.map((r) => `${r.test} ${r.size} ${r.iterations}`)).toEqual(['lat', 'bw', 'rate', 'raw'].flatMap((t) => [`${t} 8 200`, `${t} 65536 200`, `${t} 1048576 200`]));
      // For docs/benchmarks.md: emulated CPUs, so behaviour, not speed.
      console.log(`rvma perf between the guests:\n${JSON.stringify(report.results)}`);
      expect(await server.exited(30_000)).toBe(0);
    } finally {
      await server.stop('SIGKILL');
    }
  });

  // The second guest boots again after this (pair.sh), for the tests after it.
  test('the far guest dies (its kernel halted at once): puts to it fail ERR_RVMA_PEER_LOST, bounded', async () => {
    const local = await verbsEndpoint(endpoints, 'loop');
    const agent = await far('victim');
    const v = VADDR.toString();
    await agent.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1, maxBuffers: 64 } });
    for (let i = 0; i < 64; i++) await agent.child.request({ cmd: 'post', vaddr: v, size: 64 });
    await local.put(agent.address, VADDR, Buffer.alloc(64, 1), WAIT);
    const lost = new Promise<string>((resolve) => local.on('peerLost', (p) => resolve(p.nodeId)));
    // sysrq b: reboot without syncing or closing anything, and QEMU (-no-reboot) exits: no
    // packet says goodbye. pair.sh boots the guest again for the tests after this one.
    const halt = spawn(IN_PEER[0], [...IN_PEER.slice(1), 'sh', '-c', 'echo b > /proc/sysrq-trigger'], { stdio: 'ignore' });
    setTimeout(() => halt.kill('SIGKILL'), 5000).unref();
    // Puts go on until one fails (for a minute at most): the first to fail is one the dead guest
    // never answered.
    const started = Date.now();
    let failure: RvmaError | undefined;
    for (let i = 0; i < 63 && !failure && Date.now() - started < 60_000; i++) {
      failure = await local.put(agent.address, VADDR, Buffer.alloc(64, 2), WAIT).then(
        () => undefined,
        (e: RvmaError) => e,
      );
      if (!failure) await new Promise((r) => setTimeout(r, 200));
    }
    expect(failure?.code).toBe('ERR_RVMA_PEER_LOST');
    expect(await lost).toBe(agent.nodeId);
  });
});
