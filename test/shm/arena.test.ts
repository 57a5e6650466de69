// Puts between processes of one host from arena memory (allocBuffer, 64 KiB and more; from 2 MiB
// on only where the kernel gives shared memory huge pages, else those stay private memory that
// the peer pulls): the sender gives the peer its arena once, and the peer copies each such put
// out of its mapping with one memcpy instead of pulling it through the kernel. Bytes are checked
// by hash from just over 64 KiB to 256 MiB in both directions and both progress modes, whichever
// way each size goes; a sender killed in the middle
// of such a put. The arena's accounting and limit: test/integration/buffer-pool.test.ts. Hostile shares (unsealed, another size, ranges outside the
// arena, a share never sent) are the seeds of test/fuzz/fuzz_shm.cpp (npm run fuzz).
import { Endpoint, allocBuffer } from '../../src';
import { seededBytes, sha256, startAgent, trackChildren, waitStopped } from '../helpers/children';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';

const endpoints = trackEndpoints();
const KiB = 1024;
const MiB = 1024 * KiB;
// Where the peer's large puts come from: its arena once it gave it (CMA must be permitted).
const ARENA_DETAIL = Endpoint.capabilities.cma ? 'arena' : 'copy';

/** seededBytes copied into arena memory, `skew` bytes into a larger allocBuffer array. */
function inArena(size: number, seed: number, skew = 0): Uint8Array {
  const view = allocBuffer(size + skew).subarray(skew);
  view.set(seededBytes(size, seed));
  return view;
}

describe.each(PROGRESS_MODES)('shm puts from arena memory (%s progress)', (progress) => {
  jest.setTimeout(180_000);
  const children = trackChildren('each');

  test('from allocBuffer memory to a peer process, just over 64 KiB (shm.eagerMaxBytes: smaller ones go inline) to 256 MiB, byte for byte; peers() says arena', async () => {
    const receiver = await startAgent(children, 'receiver', { provider: 'shm', listen: `shm://${uniqueNodeId('rx')}` });
    const sender = await endpoints.create({ provider: 'shm', progress });
    expect(await sender.connect(receiver.address, { timeout: 10_000 })).toBe(receiver.nodeId);
    const sizes: [number, number][] = [
      [64 * KiB + 1, 0],
      [MiB + 3, 5],
      [16 * MiB, 0],
      [256 * MiB, 4096],
    ];
    for (const [i, [size, skew]] of sizes.entries()) {
      const v = (VADDR + BigInt(i)).toString();
      await receiver.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
      await receiver.child.request({ cmd: 'post', vaddr: v, size });
      const data = inArena(size, i, skew);
      const done = receiver.child.request({ cmd: 'next', vaddr: v, timeout: 60_000 }, 90_000);
      await sender.put(receiver.address, BigInt(v), data, { timeout: 60_000 });
      expect(await done).toMatchObject({ bytes: size, ops: 1, sha256: sha256(data) });
      expect(sender.peers()).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: ARENA_DETAIL }]);
      await receiver.child.request({ cmd: 'closeMailbox', vaddr: v });
    }
    // Memory outside the arena is pulled as before, over the same connection.
    const v = (VADDR + 9n).toString();
    await receiver.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
    await receiver.child.request({ cmd: 'post', vaddr: v, size: MiB });
    const plain = seededBytes(MiB, 9);
    const done = receiver.child.request({ cmd: 'next', vaddr: v, timeout: 60_000 }, 90_000);
    await sender.put(receiver.address, BigInt(v), plain, { timeout: 60_000 });
    expect(await done).toMatchObject({ bytes: MiB, sha256: sha256(plain) });
  });

  test('from a peer process to this endpoint: a whole put and gathered puts whose rest lies in the arena', async () => {
    const receiver = await endpoints.create({ provider: 'shm', listen: `shm://${uniqueNodeId('rx')}`, progress });
    const sender = await startAgent(children, 'sender', { provider: 'shm' });
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1n });
    for (const [seed, size] of [MiB, 16 * MiB].entries()) {
      const posted = mailbox.post(size);
      const next = mailbox.next({ timeout: 60_000 });
      await sender.child.request({ cmd: 'put', target: receiver.address, vaddr: VADDR.toString(), size, seed, arena: true, timeout: 60_000 }, 90_000);
      const done = await next;
      expect(done.bytes).toBe(size);
      expect(sha256(posted)).toBe(sha256(seededBytes(size, seed)));
    }
    const { peers } = (await sender.child.request({ cmd: 'peers' })) as unknown as { peers: { detail: string }[] };
    expect(peers).toEqual([{ nodeId: receiver.nodeId, provider: 'shm', detail: ARENA_DETAIL }]);

    // A head of ordinary memory and a rest in the arena (as a ring frame or a tensor goes).
    const back = await endpoints.create({ provider: 'shm', progress });
    const head = seededBytes(24, 20);
    const rest = inArena(MiB + MiB / 2, 21);
    const posted = mailbox.post(head.length + rest.length);
    const next = mailbox.next({ timeout: 60_000 });
    await back.put(receiver.address, VADDR, [head, rest], { timeout: 60_000 });
    expect((await next).bytes).toBe(head.length + rest.length);
    expect(sha256(posted)).toBe(sha256(Buffer.concat([head, rest])));
  });
});

describe('an arena put whose sender dies', () => {
  jest.setTimeout(120_000);
  const children = trackChildren('each');

  test('killed mid-put: the put lands whole or not at all, and the receiver takes the next sender', async () => {
    const receiver = await startAgent(children, 'receiver', { provider: 'shm', listen: `shm://${uniqueNodeId('rx')}` });
    const victim = await startAgent(children, 'victim', { provider: 'shm', progress: 'loop' });
    const SIZE = MiB + 4096; // in the arena on any machine (below 2 MiB)
    const v = VADDR.toString();
    await receiver.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
    await receiver.child.request({ cmd: 'post', vaddr: v, size: SIZE });
    await victim.child.request({ cmd: 'connect', address: receiver.address });
    // The receiver is frozen while the victim writes the put and dies: it reads the record
    // and the share only after, from a sender that is gone.
    receiver.child.signal('SIGSTOP');
    await waitStopped(receiver.child.pid);
    await victim.child.request({ cmd: 'putAndBlock', target: receiver.address, vaddr: v, size: SIZE, seed: 1, arena: true });
    await victim.child.kill();
    receiver.child.signal('SIGCONT');

    const { epoch } = (await receiver.child.request({ cmd: 'status', vaddr: v })) as unknown as { epoch: number };
    const extent = (await receiver.child.request({ cmd: 'extent', vaddr: v }, 60_000)) as unknown as { end: number; sha256: string };
    if (epoch === 1) {
      expect(extent).toEqual({ end: SIZE, sha256: sha256(seededBytes(SIZE, 1)) });
    } else {
      expect(epoch).toBe(0);
      expect(extent.end).toBe(0);
    }

    const next = await startAgent(children, 'next-sender', { provider: 'shm' });
    const w = (VADDR + 1n).toString();
    await receiver.child.request({ cmd: 'open', vaddr: w, options: { epoch: 'ops', threshold: 1 } });
    await receiver.child.request({ cmd: 'post', vaddr: w, size: MiB });
    const done = receiver.child.request({ cmd: 'next', vaddr: w, timeout: 30_000 }, 40_000);
    await next.child.request({ cmd: 'put', target: receiver.address, vaddr: w, size: MiB, seed: 2, arena: true });
    expect(await done).toMatchObject({ bytes: MiB, sha256: sha256(seededBytes(MiB, 2)) });
  });
});
