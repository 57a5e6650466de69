// shm write grants between processes: a far put from ordinary memory into a posted arena buffer is written by its sender.
// Most cases use shm.senderWrites 'always' on the receiver, so that every eligible put is granted;
// the default 'streaming' grants only a put with more records behind it (its own case below).
import { Endpoint, type RvmaError } from '../../src';
import { type Agent, seededBytes, sha256, startAgent, trackChildren, waitFor, waitStopped } from '../helpers/children';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';

const endpoints = trackEndpoints();
const ALWAYS = { senderWrites: 'always' } as const;
const KiB = 1024;
const MiB = 1024 * KiB;
const WRITES_MIN = 512 * KiB; // shm.senderWritesMinBytes by default: smaller far puts are pulled
// endpoint.peers() detail for a peer before any of our puts was granted, and after one was.
// Where CMA is refused nothing is granted or pulled (puts go in chunks): the bytes are checked all the same.
const PULLED_DETAIL = Endpoint.capabilities.cma ? 'cma' : 'copy';
const GRANTED_DETAIL = Endpoint.capabilities.cma ? 'arena' : 'copy';

/** One put of data into a fresh mailbox of `receiver` (an agent that posts arena buffers); its completion there. */
async function putIntoAgent(sender: Endpoint, receiver: Agent, vaddr: bigint, data: Uint8Array): Promise<Record<string, unknown>> {
  const v = vaddr.toString();
  await receiver.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
  await receiver.child.request({ cmd: 'post', vaddr: v, size: data.length });
  const done = receiver.child.request({ cmd: 'next', vaddr: v, timeout: 60_000 }, 90_000);
  await sender.put(receiver.address, vaddr, data, { timeout: 60_000 });
  const completion = await done;
  await receiver.child.request({ cmd: 'closeMailbox', vaddr: v });
  return completion;
}

async function agentPeers(agent: Agent): Promise<unknown> {
  return (await agent.child.request({ cmd: 'peers' })).peers;
}

describe.each(PROGRESS_MODES)('shm write grants (%s progress here)', (progress) => {
  jest.setTimeout(180_000);
  const children = trackChildren('each');

  test('from a plain Buffer into a peer process\'s posted buffers, 1 B to 256 MiB, byte for byte; peers() says cma until the first put of 512 KiB, arena after', async () => {
    const receiver = await startAgent(children, 'receiver', { provider: 'shm', listen: `shm://${uniqueNodeId('rx')}`, shm: ALWAYS });
    const sender = await endpoints.create({ provider: 'shm', progress });
    expect(await sender.connect(receiver.address, { timeout: 10_000 })).toBe(receiver.nodeId);
    expect(sender.peers()).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: PULLED_DETAIL }]);
    // Up to 64 KiB inline; then pulled up to shm.senderWritesMinBytes; then granted (the posted
    // buffer is in the arena below 2 MiB); 16 MiB and 256 MiB land in private memory (on hosts
    // without shared huge pages) and are pulled.
    const sizes = [1, 4 * KiB, 64 * KiB, 64 * KiB + 1, WRITES_MIN - 1, WRITES_MIN, MiB + 3, 2 * MiB - 4096, 16 * MiB, 256 * MiB];
    for (const [i, size] of sizes.entries()) {
      const data = seededBytes(size, i);
      expect(await putIntoAgent(sender, receiver, VADDR + BigInt(i), data)).toMatchObject({ bytes: size, ops: 1, sha256: sha256(data) });
      const detail = size >= WRITES_MIN ? GRANTED_DETAIL : PULLED_DETAIL;
      expect(sender.peers()).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail }]);
    }
  });

  test("to a peer process created with shm.senderWrites 'never': pulled, byte for byte, and peers() stays cma", async () => {
    const receiver = await startAgent(children, 'receiver', {
      provider: 'shm',
      listen: `shm://${uniqueNodeId('rx')}`,
      shm: { senderWrites: 'never' },
    });
    const sender = await endpoints.create({ provider: 'shm', progress });
    const data = seededBytes(MiB + 3, 4);
    expect(await putIntoAgent(sender, receiver, VADDR, data)).toMatchObject({ bytes: MiB + 3, ops: 1, sha256: sha256(data) });
    expect(sender.peers()).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: PULLED_DETAIL }]);
  });

  test('from a peer process into this endpoint: a buffer of ordinary memory is pulled, one from the arena granted; the peer\'s peers() says arena only after the second', async () => {
    const receiver = await endpoints.create({ provider: 'shm', listen: `shm://${uniqueNodeId('rx')}`, progress, shm: ALWAYS });
    const sender = await startAgent(children, 'sender', { provider: 'shm' });
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1n });
    const size = MiB + 3;
    const buffers: [Buffer | number, string][] = [
      [Buffer.alloc(size), PULLED_DETAIL],
      [size, GRANTED_DETAIL],
    ];
    for (const [seed, [memory, detail]] of buffers.entries()) {
      const posted = mailbox.post(memory);
      const next = mailbox.next({ timeout: 60_000 });
      await sender.child.request({ cmd: 'put', target: receiver.address, vaddr: VADDR.toString(), size, seed, arena: false, timeout: 60_000 }, 90_000);
      expect(await next).toMatchObject({ bytes: size, ops: 1 });
      expect(sha256(posted)).toBe(sha256(seededBytes(size, seed)));
      expect(await agentPeers(sender)).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail }]);
    }
  });

  test('granted puts with inline ones between them (answered in order, once written): 40 slices, 8 in flight, fill one arena buffer exactly once', async () => {
    // Grants from 64 KiB on, so that 20 of the slices are granted within one arena buffer.
    const receiver = await endpoints.create({
      provider: 'shm',
      listen: `shm://${uniqueNodeId('rx')}`,
      progress,
      shm: { ...ALWAYS, senderWritesMinBytes: 64 * KiB },
    });
    const sender = await startAgent(children, 'sender', { provider: 'shm' });
    // Far puts (granted) between inline ones: each is answered once its sender has written it,
    // and the puts behind it after it.
    // The total stays below 2 MiB, so the buffer is in the arena on any host.
    const far = [64 * KiB + 8, 96 * KiB, 72 * KiB + 5];
    const near = [100, 8, 4 * KiB + 3, 1];
    const sizes = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? far[(i / 2) % far.length] : near[((i - 1) / 2) % near.length]));
    const total = sizes.reduce((sum, size) => sum + size, 0);
    expect(total).toBeLessThan(2 * MiB);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'bytes', threshold: BigInt(total) });
    const posted = mailbox.post(total);
    const next = mailbox.next({ timeout: 60_000 });
    const reply = await sender.child.request({ cmd: 'putSlices', target: receiver.address, vaddr: VADDR.toString(), sizes, seed: 7, window: 8, timeout: 60_000 }, 90_000);
    expect(reply).toMatchObject({ sent: sizes.length });
    expect(await next).toMatchObject({ bytes: total, ops: sizes.length });
    expect(sha256(posted)).toBe(sha256(seededBytes(total, 7)));
    expect(await agentPeers(sender)).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: GRANTED_DETAIL }]);
  });

  test("'streaming' (the default): a lone put is pulled; puts queued behind each other are granted", async () => {
    const receiver = await startAgent(children, 'receiver', { provider: 'shm', listen: `shm://${uniqueNodeId('rx')}` });
    const sender = await endpoints.create({ provider: 'shm', progress });
    const v = VADDR.toString();
    const SIZE = MiB;
    await receiver.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
    for (let i = 0; i < 5; i++) await receiver.child.request({ cmd: 'post', vaddr: v, size: SIZE });
    const lone = seededBytes(SIZE, 10);
    const first = receiver.child.request({ cmd: 'next', vaddr: v, timeout: 30_000 }, 40_000);
    await sender.put(receiver.address, VADDR, lone, { timeout: 30_000 });
    expect(await first).toMatchObject({ bytes: SIZE, sha256: sha256(lone) });
    expect(sender.peers()).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: PULLED_DETAIL }]);

    // Four puts written into the ring of a frozen receiver: it finds them all at once.
    receiver.child.signal('SIGSTOP');
    await waitStopped(receiver.child.pid);
    const data = [11, 12, 13, 14].map((seed) => seededBytes(SIZE, seed));
    const puts = data.map((bytes) => sender.put(receiver.address, VADDR, bytes, { timeout: 30_000 }));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the puts' records reach the ring
    receiver.child.signal('SIGCONT');
    await Promise.all(puts);
    for (const bytes of data) {
      expect(await receiver.child.request({ cmd: 'next', vaddr: v, timeout: 30_000 }, 40_000)).toMatchObject({ bytes: SIZE, sha256: sha256(bytes) });
    }
    expect(sender.peers()).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: GRANTED_DETAIL }]);
  });

  test('a sender killed before it writes its granted put: the held range is given back, and the next sender\'s put is the only one that completes', async () => {
    const receiver = await endpoints.create({ provider: 'shm', listen: `shm://${uniqueNodeId('rx')}`, progress, shm: ALWAYS });
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1n });
    const posted = mailbox.post(MiB);
    // A put too large for the buffer says whether the buffer is held: refused for want of a
    // buffer while a put's range is reserved in it, as too large once it is free again.
    const probe = await endpoints.create({ provider: 'loopback' });
    const tooLarge = Buffer.alloc(MiB + 1);
    const probeCode = (): Promise<string> =>
      probe.put(receiver, VADDR, tooLarge, { timeout: 10_000 }).then(
        () => 'placed',
        (e: RvmaError) => e.code,
      );
    expect(await probeCode()).toBe('ERR_RVMA_TOO_LARGE');

    // Its put record goes into the ring, then its JS thread blocks: it never handles the Grant.
    const victim = await startAgent(children, 'victim', { provider: 'shm', progress: 'loop' });
    await victim.child.request({ cmd: 'connect', address: receiver.address });
    await victim.child.request({ cmd: 'putAndBlock', target: receiver.address, vaddr: VADDR.toString(), size: MiB, seed: 1 });
    await waitFor('the victim\'s put holds the buffer', async () => (await probeCode()) === 'ERR_RVMA_NO_BUFFER');
    await victim.child.kill();
    await waitFor('the dead victim\'s range is given back', async () => (await probeCode()) === 'ERR_RVMA_TOO_LARGE');

    const next = await startAgent(children, 'next-sender', { provider: 'shm' });
    const done = mailbox.next({ timeout: 30_000 });
    await next.child.request({ cmd: 'put', target: receiver.address, vaddr: VADDR.toString(), size: MiB, seed: 2, timeout: 30_000 }, 40_000);
    expect(await done).toMatchObject({ bytes: MiB, ops: 1 });
    expect(sha256(posted)).toBe(sha256(seededBytes(MiB, 2)));
    await expectRejects(mailbox.next({ timeout: 200 }), 'ERR_RVMA_TIMEOUT');
    expect(mailbox.epoch).toBe(1);
  });
});

test("shm.senderWrites must be 'never', 'streaming' or 'always', shm.senderWritesMinBytes a byte count", async () => {
  await expectRejects(
    Endpoint.create({ provider: 'shm', shm: { senderWrites: true as unknown as 'always' } }),
    'ERR_RVMA_INVALID_ARGUMENT',
    /shm\.senderWrites must be 'never', 'streaming' or 'always'/,
  );
  await expectRejects(
    Endpoint.create({ provider: 'shm', shm: { senderWritesMinBytes: -1 } }),
    'ERR_RVMA_INVALID_ARGUMENT',
    /shm\.senderWritesMinBytes/,
  );
});
