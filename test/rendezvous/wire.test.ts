// The rendezvous protocol as a peer sees it on the wire: a raw endpoint with its own control
// mailbox talks to a RendezvousMgr message by message, to check each answer, and sends what
// a faulty or hostile peer could send. A bad message may fail its own request, but the
// manager must go on serving everyone else.
import { crc32 } from 'node:zlib';
import { Endpoint, type Mailbox, MemoryDirectory, MemoryDirectoryHub, RvmaError, createKey } from '../../src';
import { CONTROL_VADDR, type ControlMessage, type ErrorStatus, Kind, type MetaDataResponse, type TensorReRequest, type TensorRequest, decode, encode } from '../../src/rendezvous/messages';
import { pushHeader } from '../../src/rendezvous/push';
import { packValue } from '../../src/tensor/codec';
import { expectRejects, settledSoon } from '../helpers/errors';
import { type Node, bytesOf, device, floats, nextServed, task, trackRendezvous, uniqueJob } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };

interface Raw {
  endpoint: Endpoint;
  task: string;
  from: { from: string; fromIncarnation: string };
  send(to: string, message: ControlMessage | Uint8Array): Promise<void>;
  /** The next control message that reached the raw peer. */
  next(timeout?: number): Promise<ControlMessage>;
  /** A one-time mailbox for content, as a receiver would open. */
  contentMailbox(bytes: number): Mailbox;
}

const raws: Endpoint[] = [];
afterEach(async () => {
  await Promise.all(raws.splice(0).map((e) => e.close()));
});

async function rawPeer(hub: MemoryDirectoryHub, taskName: string): Promise<Raw> {
  const endpoint = await Endpoint.create({ labels: [taskName], directory: new MemoryDirectory(hub) });
  raws.push(endpoint);
  const control = endpoint.openAt('test', CONTROL_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: 32 });
  for (let i = 0; i < 32; i++) control.post(8192);
  return {
    endpoint,
    task: taskName,
    from: { from: endpoint.nodeId, fromIncarnation: endpoint.incarnation },
    send: (to, message) => endpoint.put(to, CONTROL_VADDR, message instanceof Uint8Array ? message : encode(message), WAIT),
    async next(timeout = WAIT.timeout) {
      const c = await control.next({ timeout });
      const message = decode(c.buffer.subarray(0, c.bytes));
      control.post(c.buffer);
      return message;
    },
    contentMailbox(bytes) {
      const mailbox = endpoint.openDynamicMailbox({ epoch: 'bytes', maxBuffers: 1 });
      mailbox.post(bytes);
      return mailbox;
    },
  };
}

/** A manager on task 0 of a fresh job and a raw peer on task 1. */
async function setUp(options?: { validate?: boolean }) {
  const hub = new MemoryDirectoryHub();
  const job = uniqueJob('wire');
  const mgr: Node = await rendezvous.node(hub, task(job, 0), 'auto', options);
  const raw = await rawPeer(hub, task(job, 1));
  const key = (name: string, incarnation: string = mgr.endpoint.incarnation) =>
    createKey(device(mgr.task), incarnation, device(raw.task), name);
  const request = (k: string, requestIndex: number, extra: Partial<{ stepId: string; dataVaddr: bigint; cachedMeta: MetaDataResponse['meta'] | null }> = {}) =>
    raw.send(mgr.endpoint.nodeId, {
      kind: Kind.TensorRequest,
      ...raw.from,
      key: k,
      stepId: '1',
      requestIndex,
      dataVaddr: 0n,
      cachedMeta: null,
      pushVaddr: 0n,
      ...extra,
    });
  return { hub, job, mgr, raw, key, request };
}

function expectError(message: ControlMessage, requestIndex: number, code: RegExp | string, from: string): ErrorStatus {
  expect(message.kind).toBe(Kind.ErrorStatus);
  const e = message as ErrorStatus;
  expect(e.requestIndex).toBe(requestIndex);
  expect(e.from).toBe(from);
  if (typeof code === 'string') expect(e.code).toBe(code);
  else expect(e.code).toMatch(code);
  return e;
}

describe('the sender side, message by message', () => {
  test('request without cached meta: META_DATA_RESPONSE with a checksum, then the content lands in the re-request mailbox', async () => {
    const { mgr, raw, key, request } = await setUp({ validate: true });
    const t = floats([5, 7], 1);
    mgr.mgr.find(1).send(key('a'), t);
    await request(key('a'), 7);
    const response = (await raw.next()) as MetaDataResponse;
    expect(response).toEqual({
      kind: Kind.MetaDataResponse,
      from: mgr.endpoint.nodeId,
      fromIncarnation: mgr.endpoint.incarnation,
      requestIndex: 7,
      meta: { dtype: 'float32', shape: [5, 7], isDead: false, byteSize: 140 },
      checksum: crc32(bytesOf(t)),
    });
    const mailbox = raw.contentMailbox(140);
    await raw.send(mgr.endpoint.nodeId, { kind: Kind.TensorReRequest, ...raw.from, requestIndex: 7, dataVaddr: mailbox.vaddr });
    const content = await mailbox.next(WAIT);
    expect(Buffer.from(content.buffer.subarray(0, content.bytes)).equals(bytesOf(t))).toBe(true);
    expect(mgr.mgr.counters).toMatchObject({ clonePuts: 1, directPuts: 0 });

    // The clone was put and dropped: a second re-request for it is a protocol error.
    await raw.send(mgr.endpoint.nodeId, { kind: Kind.TensorReRequest, ...raw.from, requestIndex: 7, dataVaddr: mailbox.vaddr });
    const error = expectError(await raw.next(), 7, 'ERR_RVMA_PROTOCOL', mgr.endpoint.nodeId);
    expect(error.message).toMatch(/no content is held/);
  });

  test('request with the right cached meta and a mailbox: the content is put there directly, no meta response', async () => {
    const { mgr, raw, key, request } = await setUp();
    const t = floats([16], 2);
    const mailbox = raw.contentMailbox(64);
    await request(key('b'), 3, { dataVaddr: mailbox.vaddr, cachedMeta: { dtype: 'float32', shape: [16], isDead: false, byteSize: 64 } });
    mgr.mgr.find(1).send(key('b'), t);
    const content = await mailbox.next(WAIT);
    expect(Buffer.from(content.buffer.subarray(0, content.bytes)).equals(bytesOf(t))).toBe(true);
    expect(mgr.mgr.counters).toMatchObject({ directPuts: 1, clonePuts: 0 });
  });

  test('a direct put the requester has no mailbox for comes back as ERROR_STATUS with the put refusal', async () => {
    const { mgr, raw, key, request } = await setUp();
    mgr.mgr.find(1).send(key('c'), floats([4], 3));
    await request(key('c'), 9, { dataVaddr: 0xfeedn << 48n, cachedMeta: { dtype: 'float32', shape: [4], isDead: false, byteSize: 16 } });
    expectError(await raw.next(), 9, 'ERR_RVMA_NO_MAILBOX', mgr.endpoint.nodeId);
  });

  test.each<[string, (s: Awaited<ReturnType<typeof setUp>>) => string, string, RegExp]>([
    ['a key naming another incarnation of the sender', (s) => s.key('x', '0123456789abcdef'), 'ERR_RVMA_PEER_LOST', /incarnation 0123456789abcdef/],
    ['a key whose source task the manager does not host', (s) => createKey(device(task(s.job, 5)), s.mgr.endpoint.incarnation, device(s.raw.task), 'x'), 'ERR_RVMA_INVALID_ARGUMENT', /does not host/],
    ['a malformed key', () => 'not;a;key', 'ERR_RVMA_INVALID_ARGUMENT', /5 parts/],
  ])('%s: ERROR_STATUS to the requester', async (_, makeKey, code, message) => {
    const s = await setUp();
    await s.request(makeKey(s), 11);
    expect(expectError(await s.raw.next(), 11, code, s.mgr.endpoint.nodeId).message).toMatch(message);
  });
});

describe('faulty or hostile peers', () => {
  test('bytes that are no control message are dropped and counted; the manager keeps serving', async () => {
    const { mgr, raw, key, request } = await setUp();
    await raw.send(mgr.endpoint.nodeId, Uint8Array.from([0x85]));
    await raw.send(mgr.endpoint.nodeId, packValue({ kind: 42, from: 'x', fromIncarnation: '1' }));
    mgr.mgr.find(1).send(key('d'), floats([2], 4));
    await request(key('d'), 1);
    // Control messages are handled in arrival order: the answer comes after both were dropped.
    expect((await raw.next()).kind).toBe(Kind.MetaDataResponse);
    expect(mgr.mgr.counters.errors).toBe(2);
  });

  test.each([
    ['not a number', 'abc'],
    ['negative', '-1'],
    ['beyond u64', (1n << 64n).toString()],
  ])('a request whose stepId is %s fails alone; the manager keeps serving', async (_, stepId) => {
    const { mgr, raw, key, request } = await setUp();
    mgr.mgr.find(1).send(key('e'), floats([2], 5));
    await request(key('e'), 1, { stepId });
    await request(key('e'), 2);
    // The bad request is answered with an error (or dropped), and the good one is answered.
    let message = await raw.next(3000);
    if (message.kind === Kind.ErrorStatus) {
      expectError(message, 1, /^ERR_RVMA_(INVALID_ARGUMENT|PROTOCOL)$/, mgr.endpoint.nodeId);
      message = await raw.next(3000);
    }
    expect(message).toMatchObject({ kind: Kind.MetaDataResponse, requestIndex: 2 });
  });

  test('an answer from a node other than the one asked is ignored', async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob('wire');
    const sender = await rendezvous.node(hub, task(job, 0), 'auto');
    const receiver = await rendezvous.node(hub, task(job, 1), 'auto');
    const stranger = await rawPeer(hub, task(job, 2));
    const k = createKey(device(sender.task), sender.endpoint.incarnation, device(receiver.task), 'f');
    const served = nextServed(sender.mgr.find(1));
    const got = receiver.mgr.find(1).recv(k, WAIT);
    await served;
    // The receiver's first request has index 1: the stranger answers it with an error.
    await stranger.send(receiver.endpoint.nodeId, { kind: Kind.ErrorStatus, ...stranger.from, requestIndex: 1, code: 'ERR_RVMA_ABORTED', message: 'forged' });
    // A request with a stale key is answered at once; by then the forged message was handled.
    await stranger.send(receiver.endpoint.nodeId, {
      kind: Kind.TensorRequest, ...stranger.from, key: createKey(device(receiver.task), 'ff', device(stranger.task), 'z'),
      stepId: '1', requestIndex: 1, dataVaddr: 0n, cachedMeta: null, pushVaddr: 0n,
    });
    expectError(await stranger.next(), 1, 'ERR_RVMA_PEER_LOST', receiver.endpoint.nodeId);
    expect(await settledSoon(got)).toBe(false);
    expect(receiver.mgr.counters.errors).toBe(0);
    const t = floats([3], 6);
    sender.mgr.find(1).send(k, t);
    expect(bytesOf((await got).tensor).equals(bytesOf(t))).toBe(true);
  });

  /** A receiver with one remote recv parked at its sender (request index 1), and a forger speaking as that sender. */
  async function parkedRecv(timeout: number) {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob('wire');
    const sender = await rendezvous.node(hub, task(job, 0), 'auto');
    const receiver = await rendezvous.node(hub, task(job, 1), 'auto');
    const k = (n: string) => createKey(device(sender.task), sender.endpoint.incarnation, device(receiver.task), n);
    const served = nextServed(sender.mgr.find(1));
    // Observed from the start: it may settle while a forged message is still being put.
    const outcome = receiver.mgr.find(1).recv(k('first'), { timeout }).then(() => undefined, (e: Error) => e);
    await served;
    const asSender = { from: sender.endpoint.nodeId, fromIncarnation: sender.endpoint.incarnation };
    const forge = (message: ControlMessage | Uint8Array) =>
      sender.endpoint.put(receiver.endpoint.nodeId, CONTROL_VADDR, message instanceof Uint8Array ? message : encode(message), WAIT);
    return { sender, receiver, k, outcome, asSender, forge };
  }

  // What a faulty sender could answer: a meta whose byte size is beyond any buffer (2 TiB).
  const HUGE = 2 ** 41;

  test('a meta response beyond any buffer does not stop the manager: other keys still go through', async () => {
    const { sender, receiver, k, outcome, forge } = await parkedRecv(10_000);
    await forge(packValue({
      kind: Kind.MetaDataResponse, from: sender.endpoint.nodeId, fromIncarnation: sender.endpoint.incarnation,
      requestIndex: 1, meta: { dtype: 'uint8', shape: [HUGE], isDead: false, byteSize: HUGE }, checksum: null,
    }));
    const t = floats([2], 7);
    const next = receiver.mgr.find(1).recv(k('next'), WAIT);
    sender.mgr.find(1).send(k('next'), t);
    expect(bytesOf((await next).tensor).equals(bytesOf(t))).toBe(true);
    receiver.mgr.cleanup(1);
    await outcome;
  });

  test('a meta response beyond any buffer fails the recv it answers (not left to its timeout)', async () => {
    const { sender, outcome, forge } = await parkedRecv(3000);
    await forge(packValue({
      kind: Kind.MetaDataResponse, from: sender.endpoint.nodeId, fromIncarnation: sender.endpoint.incarnation,
      requestIndex: 1, meta: { dtype: 'uint8', shape: [HUGE], isDead: false, byteSize: HUGE }, checksum: null,
    }));
    const error = await outcome;
    expect(error).toBeInstanceOf(Error);
    expect((error as { code?: string }).code).toBe('ERR_RVMA_PROTOCOL');
  });

  test('an ERROR_STATUS code that is no rvma error code surfaces as ERR_RVMA_PROTOCOL', async () => {
    const { outcome, asSender, forge } = await parkedRecv(10_000);
    await forge({ kind: Kind.ErrorStatus, ...asSender, requestIndex: 1, code: 'EACCES', message: 'not ours' });
    const error = await outcome;
    expect(error).toBeInstanceOf(RvmaError);
    expect(error).toMatchObject({ code: 'ERR_RVMA_PROTOCOL', message: expect.stringMatching(/not ours/) });
  });
});

test('a remote recv whose sender task is not in the directory rejects with ERR_RVMA_NO_PEER', async () => {
  const hub = new MemoryDirectoryHub();
  const job = uniqueJob('wire');
  const receiver = await rendezvous.node(hub, task(job, 1), 'auto');
  const k = createKey(device(task(job, 0)), 'abc', device(receiver.task), 'x');
  await expectRejects(receiver.mgr.find(1).recv(k, WAIT), 'ERR_RVMA_NO_PEER', /no live node hosts/);
});

test('a sender pushing frames of the wrong size: each is counted, the recv of the step it names asks, and a right one still lands', async () => {
  const hub = new MemoryDirectoryHub();
  const job = uniqueJob('wire');
  const mgr = await rendezvous.node(hub, task(job, 1), 'auto');
  const raw = await rawPeer(hub, task(job, 0));
  const to = mgr.endpoint.nodeId;
  const k = createKey(device(raw.task), raw.endpoint.incarnation, device(mgr.task), 'pushed');
  const content = (seed: number) => bytesOf(floats([4], seed));
  const requested = async (step: string) => {
    const m = (await raw.next()) as TensorRequest;
    expect(m).toMatchObject({ kind: Kind.TensorRequest, stepId: step });
    return m;
  };

  // Step 1 takes the meta path; step 2 goes with cached meta and offers the push mailbox.
  const first = mgr.mgr.find(1).recv(k, WAIT);
  const r1 = await requested('1');
  await raw.send(to, { kind: Kind.MetaDataResponse, ...raw.from, requestIndex: r1.requestIndex, meta: { dtype: 'float32', shape: [4], isDead: false, byteSize: 16 }, checksum: null });
  const again = (await raw.next()) as TensorReRequest;
  await raw.endpoint.put(to, again.dataVaddr, content(1), WAIT);
  await first;
  const second = mgr.mgr.find(2).recv(k, WAIT);
  const r2 = await requested('2');
  expect(r2.pushVaddr).not.toBe(0n);
  await raw.send(to, { kind: Kind.PushAccepted, ...raw.from, key: r2.key, pushVaddr: r2.pushVaddr });
  await raw.endpoint.put(to, r2.dataVaddr, content(2), WAIT);
  await second;
  for (const end = Date.now() + 5_000; mgr.mgr.pushMailboxes !== 1 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 2));
  expect(mgr.mgr.pushMailboxes).toBe(1);

  // A frame naming step 3 with 4 content bytes instead of 16: the recv waiting for it asks.
  const third = mgr.mgr.find(3).recv(k, WAIT);
  await raw.endpoint.put(to, r2.pushVaddr, Buffer.concat([pushHeader(3n), content(3).subarray(0, 4)]), WAIT);
  const r3 = await requested('3');
  expect(mgr.mgr.counters.errors).toBe(1);
  await raw.endpoint.put(to, r3.dataVaddr, content(3), WAIT);
  expect(bytesOf((await third).tensor).equals(content(3))).toBe(true);

  // A frame too short for its header names no step; a right frame after it lands.
  await raw.endpoint.put(to, r2.pushVaddr, Uint8Array.of(1, 2, 3), WAIT);
  await raw.endpoint.put(to, r2.pushVaddr, Buffer.concat([pushHeader(4n), content(4)]), WAIT);
  expect(bytesOf((await mgr.mgr.find(4).recv(k, WAIT)).tensor).equals(content(4))).toBe(true);
  expect(mgr.mgr.counters).toMatchObject({ errors: 2, pushesReceived: 1 });
});
