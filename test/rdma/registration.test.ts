// Registration refused by the kernel (the locked-memory limit) fails puts with
// ERR_RVMA_REGISTRATION on whichever side it happens, and the connection stays up. The
// refusing side is a child process run without CAP_IPC_LOCK (root would bypass the limit)
// under a low RLIMIT_MEMLOCK. Runs inside the Soft-RoCE guest only.
import { type Endpoint } from '../../src';
import { ChildCommandError, seededBytes, sha256, startAgent, trackChildren, waitStopped } from '../helpers/children';
import { VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer } from '../helpers/data';
import { expectRejects } from '../helpers/errors';
import { RDMA_ADDR, describeInGuest, underMemlock, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const WAIT = { timeout: 60_000 };
const LISTEN = `rdma://${RDMA_ADDR}:0`;
// A small ring (4 x 4 KiB; 44 KiB registered with its staging and control buffers) and 64
// receive buffers (32 KiB) fit the limit; a 1 MiB ring does not, nor 4096 receive buffers.
const SMALL_RING = { slots: 4, slotBytes: 4096, receiveDepth: 64 };
const EAGER_MAX = 4096 - 32;
const LIMIT = 256 * 1024;

async function childFails(request: Promise<unknown>): Promise<string | undefined> {
  try {
    await request;
  } catch (error) {
    if (error instanceof ChildCommandError) return error.code;
    throw error;
  }
  return undefined;
}

describeInGuest('verbs registration failures', () => {
  jest.setTimeout(180_000);
  const children = trackChildren('each');

  test('at the receiver: eager puts land, a put it must read into its buffer and a raw write into its region fail ERR_RVMA_REGISTRATION', async () => {
    const receiver = await startAgent(children, 'receiver', { provider: 'verbs', listen: LISTEN, verbs: SMALL_RING }, underMemlock(LIMIT));
    const v = VADDR.toString();
    await receiver.child.request({ cmd: 'open', vaddr: v });
    await receiver.child.request({ cmd: 'post', vaddr: v, size: 1 << 20, threshold: EAGER_MAX + 100 });
    const { key } = await receiver.child.request({ cmd: 'region', size: 1 << 20 });
    const sender = await verbsEndpoint(endpoints, 'loop');

    // The eager limit is the receiver's slot size: one byte more is read, and needs the buffer registered.
    const to = receiver.address;
    const eager = seededBytes(EAGER_MAX, 1);
    await sender.put(to, VADDR, eager, WAIT);
    const read = { offset: 8192, ...WAIT };
    await expectRejects(sender.put(to, VADDR, seededBytes(EAGER_MAX + 1, 2), read), 'ERR_RVMA_REGISTRATION', /ulimit -l/);
    await expectRejects(sender.put(to, VADDR, seededBytes(512 * 1024, 3), read), 'ERR_RVMA_REGISTRATION');
    await expectRejects(sender.rawWrite(to, BigInt(key as string), 0, Buffer.alloc(8), WAIT), 'ERR_RVMA_REGISTRATION');

    // Same connection: nothing of the refused puts counted, the next eager put ends the epoch.
    const tail = seededBytes(100, 4);
    await sender.put(to, VADDR, tail, { offset: EAGER_MAX, ...WAIT });
    const done = await receiver.child.request({ cmd: 'next', vaddr: v, hashBytes: EAGER_MAX + 100, ...WAIT }, 60_000);
    expect(done).toMatchObject({ epoch: 1, bytes: EAGER_MAX + 100, ops: 2 });
    const bytes = await receiver.child.request({ cmd: 'read', vaddr: v, start: 0, end: 8192 + 16 });
    const expected = Buffer.concat([eager, tail, Buffer.alloc(8192 + 16 - EAGER_MAX - 100)]);
    expect(bytes.hex).toBe(expected.toString('hex'));
  });

  test('at the sender: its large put and large raw write fail ERR_RVMA_REGISTRATION before anything is sent; small ones land', async () => {
    const receiver: Endpoint = await verbsEndpoint(endpoints, 'loop');
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1 });
    mailbox.post(1 << 20);
    const region = receiver.registerRegion(1 << 20);
    const sender = await startAgent(children, 'sender', { provider: 'verbs', verbs: SMALL_RING }, underMemlock(LIMIT));
    const to = receiver.address;
    const v = VADDR.toString();

    expect(await childFails(sender.child.request({ cmd: 'put', target: to, vaddr: v, size: 1 << 20, seed: 5 }))).toBe('ERR_RVMA_REGISTRATION');
    expect(
      await childFails(sender.child.request({ cmd: 'rawWrite', target: to, key: String(region.key), offset: 0, size: 1 << 20, seed: 6 })),
    ).toBe('ERR_RVMA_REGISTRATION');
    // A read put whose 64 KiB source fits the limit, and a staged raw write.
    await sender.child.request({ cmd: 'put', target: to, vaddr: v, size: 65536, seed: 7 });
    const done = await mailbox.next(WAIT);
    expect(done).toMatchObject({ epoch: 1, bytes: 65536, ops: 1 });
    expect(asBuffer(done.buffer).subarray(0, 65536).equals(seededBytes(65536, 7))).toBe(true);
    await sender.child.request({ cmd: 'rawWrite', target: to, key: String(region.key), offset: 4096, size: 4096, seed: 8 });
    expect(await region.next(WAIT)).toEqual({ offset: 4096, bytes: 4096 });
    expect(asBuffer(region.buffer).subarray(4096, 8192).equals(seededBytes(4096, 8))).toBe(true);
  });

  test('reads into one buffer share its registration: four at once fit a limit that holds it only once', async () => {
    // 76 KiB of ring, staging and receive buffers plus one 256 KiB registration fit 384 KiB; two of the buffer do not.
    const receiver = await startAgent(children, 'receiver', { provider: 'verbs', listen: LISTEN, verbs: SMALL_RING }, underMemlock(384 * 1024));
    const v = VADDR.toString();
    await receiver.child.request({ cmd: 'open', vaddr: v });
    await receiver.child.request({ cmd: 'post', vaddr: v, size: 256 * 1024 });
    const sender = await verbsEndpoint(endpoints, 'loop');
    expect(await sender.connect(receiver.address, WAIT)).toBe(receiver.nodeId);
    // Stopped, the receiver finds the four requests to send waiting together when it resumes and
    // starts all four reads into the buffer before any of them can finish.
    receiver.child.signal('SIGSTOP');
    await waitStopped(receiver.child.pid);
    const parts = [0, 1, 2, 3].map((i) => seededBytes(65536, 10 + i));
    const puts = parts.map((part, i) => sender.put(receiver.address, VADDR, part, { offset: i * 65536, ...WAIT }));
    receiver.child.signal('SIGCONT');
    await Promise.all(puts);
    const done = await receiver.child.request({ cmd: 'next', vaddr: v, ...WAIT }, 60_000);
    expect(done).toMatchObject({ epoch: 1, bytes: 256 * 1024, ops: 4, sha256: sha256(Buffer.concat(parts)) });
  });

  test('an acceptor that cannot register the connection: the dialer fails ERR_RVMA_REGISTRATION with its reason', async () => {
    // The default ring (64 x 16 KiB = 1 MiB) is more than the acceptor may lock.
    const receiver = await startAgent(children, 'receiver', { provider: 'verbs', listen: LISTEN, verbs: { receiveDepth: 64 } }, underMemlock(LIMIT));
    const sender = await verbsEndpoint(endpoints, 'loop');
    await expectRejects(sender.connect(receiver.address, WAIT), 'ERR_RVMA_REGISTRATION', /refused by the peer: .*cannot register.*ulimit -l/);
    await expectRejects(sender.put(receiver.address, VADDR, Buffer.alloc(8), WAIT), 'ERR_RVMA_REGISTRATION', /could not be registered/);
    const refusal = await receiver.child.next((m) => m.type === 'protocolError', 60_000);
    expect(refusal.message).toMatch(/cannot accept a connection: .*ulimit -l/);
  });

  test("a connection whose own buffers exceed the limit: connect and put fail ERR_RVMA_REGISTRATION, saying what to raise", async () => {
    const receiver = await verbsEndpoint(endpoints, 'loop');
    receiver.openMailbox(VADDR).post(64);
    const sender = await startAgent(children, 'sender', { provider: 'verbs', verbs: { receiveDepth: 64 } }, underMemlock(LIMIT));
    const failed = sender.child.request({ cmd: 'connect', address: receiver.address });
    await expect(failed).rejects.toMatchObject({ code: 'ERR_RVMA_REGISTRATION', message: expect.stringMatching(/ulimit -l/) });
    expect(await childFails(sender.child.request({ cmd: 'put', target: receiver.address, vaddr: VADDR.toString(), size: 64, seed: 9 }))).toBe(
      'ERR_RVMA_REGISTRATION',
    );
  });

  test('receive buffers beyond the limit: Endpoint.create fails ERR_RVMA_REGISTRATION, naming receiveDepth and what to raise', async () => {
    const child = children.spawn('endpoint', 'agent.js', [JSON.stringify({ provider: 'verbs', listen: LISTEN })], undefined, underMemlock(LIMIT));
    const fatal = await child.next('fatal', 60_000);
    expect(fatal.code).toBe('ERR_RVMA_REGISTRATION');
    expect(fatal.message).toMatch(/^RvmaError: Endpoint\.create: .*4096 buffers \(verbs\.receiveDepth\).*ulimit -l/);
  });
});
