// A peer cannot make a manager hold without limit. Its requests past maxRequestsPerPeer are
// refused at once with ERROR_STATUS ERR_RVMA_OVERFLOW; the steps only its requests made go when
// it withdraws them or is lost; answers no held request accounts for stop at the same bound for
// a peer that takes none, and a tensor whose meta response cannot be sent is kept. The hostile peer is a raw endpoint (or a child process) that writes TENSOR_REQUEST
// records into the control mailbox as messages.ts encodes them, for keys never sent; the
// legitimate peer uses the API, and its transfers complete throughout.
import { Endpoint, type Mailbox, MemoryDirectory, MemoryDirectoryHub, type PeerLostInfo, RendezvousMgr, type RendezvousOptions, type RvmaError, createKey } from '../../src';
import { CONTROL_VADDR, type ControlMessage, type ErrorStatus, Kind, decode, encode } from '../../src/rendezvous/messages';
import { startAgent, trackChildren, waitFor } from '../helpers/children';
import { expectRejects, expectThrows } from '../helpers/errors';
import { type Node, bytesOf, device, floats, task, trackRendezvous, uniqueJob } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const children = trackChildren('each');
const WAIT = { timeout: 10_000 };
/** The default of maxRequestsPerPeer (docs/api.md). */
const DEFAULT_BOUND = 1024;

interface Hostile {
  endpoint: Endpoint;
  task: string;
  control: Mailbox;
  /** Writes TENSOR_REQUESTs for keys the victim never sends, one per [requestIndex, stepId], a few in flight at once. */
  request(victim: Node, requests: [number, number][]): Promise<void>;
  /** The next control message that reached it. */
  next(): Promise<ControlMessage>;
}

const raws: Endpoint[] = [];
afterEach(async () => {
  await Promise.all(raws.splice(0).map((e) => e.close()));
});

/** A raw tcp endpoint with a control mailbox of `buffers` posted buffers (0: it takes no message). */
async function hostilePeer(hub: MemoryDirectoryHub, taskName: string, buffers: number): Promise<Hostile> {
  const endpoint = await Endpoint.create({ labels: [taskName], provider: 'tcp', listen: 'tcp://127.0.0.1:0', directory: new MemoryDirectory(hub) });
  raws.push(endpoint);
  const control = endpoint.openAt('test', CONTROL_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: 64 });
  for (let i = 0; i < buffers; i++) control.post(8192);
  const from = { from: endpoint.nodeId, fromIncarnation: endpoint.incarnation };
  return {
    endpoint,
    task: taskName,
    control,
    async request(victim, requests) {
      const put = ([requestIndex, stepId]: [number, number]) =>
        endpoint.put(
          victim.endpoint.nodeId,
          CONTROL_VADDR,
          encode({
            kind: Kind.TensorRequest,
            ...from,
            key: createKey(device(victim.task), victim.endpoint.incarnation, device(taskName), `never-sent-${requestIndex}`),
            stepId: String(stepId),
            requestIndex,
            dataVaddr: 0n,
            cachedMeta: null,
            pushVaddr: 0n,
          }),
          { ...WAIT, noBufferRetryMs: WAIT.timeout }, // the victim's control mailbox may be momentarily full
        );
      for (let i = 0; i < requests.length; i += 64) await Promise.all(requests.slice(i, i + 64).map(put));
    },
    async next() {
      const c = await control.next(WAIT);
      const message = decode(c.buffer.subarray(0, c.bytes));
      control.post(c.buffer);
      return message;
    },
  };
}

/** Requests 1..count, each in a step of its own from firstStep on. */
function ownSteps(count: number, firstStep: number): [number, number][] {
  return Array.from({ length: count }, (_, i) => [i + 1, firstStep + i]);
}

async function setUp(victimOptions: RendezvousOptions, hostileBuffers = 64) {
  const hub = new MemoryDirectoryHub();
  const job = uniqueJob('bound');
  const victim = await rendezvous.node(hub, task(job, 0), 'tcp', victimOptions);
  const friend = await rendezvous.node(hub, task(job, 1), 'tcp');
  const hostile = await hostilePeer(hub, task(job, 2), hostileBuffers);
  const friendKey = (name: string) => createKey(device(victim.task), victim.endpoint.incarnation, device(friend.task), name);
  /** The legitimate peer receives a tensor from the victim in `step`. */
  const transfer = async (step: number, name: string): Promise<void> => {
    const expected = floats([64], step);
    const received = friend.mgr.find(step).recv(friendKey(name), WAIT);
    victim.mgr.find(step).send(friendKey(name), expected);
    const { tensor } = await received;
    expect(bytesOf(tensor).equals(bytesOf(expected))).toBe(true);
  };
  return { hub, job, victim, friend, hostile, transfer };
}

/**
 * Resolves when the endpoint reports the node lost (bounded). The manager listened first, so it
 * has handled the loss by then.
 */
function lost(endpoint: Endpoint, nodeId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      endpoint.off('peerLost', onLost);
      reject(new Error(`node ${nodeId} was not reported lost within 20 s`));
    }, 20_000);
    const onLost = (info: PeerLostInfo): void => {
      if (info.nodeId !== nodeId) return;
      clearTimeout(timer);
      endpoint.off('peerLost', onLost);
      resolve();
    };
    endpoint.on('peerLost', onLost);
  });
}

const until = (what: string, check: () => boolean): Promise<void> => waitFor(what, async () => check());

function expectOverflow(message: ControlMessage, from: string): ErrorStatus {
  expect(message.kind).toBe(Kind.ErrorStatus);
  const e = message as ErrorStatus;
  expect({ code: e.code, from: e.from }).toEqual({ code: 'ERR_RVMA_OVERFLOW', from });
  expect(e.message).toMatch(/maxRequestsPerPeer/);
  return e;
}

describe('maxRequestsPerPeer: what one peer can make a rendezvous manager hold', () => {
  test('the option is checked like every other, and a valid one is taken', async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob('bound');
    const endpoint = await Endpoint.create({ labels: [task(job, 0)], directory: new MemoryDirectory(hub) });
    raws.push(endpoint);
    const bad = /maxRequestsPerPeer must be an integer in \[1, 16777216\]/;
    expectThrows(() => RendezvousMgr.create(endpoint, { maxRequestsPerPeer: 0 }), 'ERR_RVMA_INVALID_ARGUMENT', bad);
    expectThrows(() => RendezvousMgr.create(endpoint, { maxRequestsPerPeer: 1.5 }), 'ERR_RVMA_INVALID_ARGUMENT', bad);
    expectThrows(() => RendezvousMgr.create(endpoint, { maxRequestPerPeer: 8 } as RendezvousOptions), 'ERR_RVMA_INVALID_ARGUMENT', /unknown option "maxRequestPerPeer"/);
    const mgr = RendezvousMgr.create(endpoint, { maxRequestsPerPeer: 1 });
    expect({ held: mgr.heldRequests(), steps: mgr.stepCount }).toEqual({ held: 0, steps: 0 });
    await mgr.close();
  });

  test('at the default bound: requests past it get ERROR_STATUS ERR_RVMA_OVERFLOW at once, and what the peer made the victim hold goes when its endpoint closes', async () => {
    const { victim, hostile, transfer } = await setUp({});
    await hostile.request(victim, ownSteps(DEFAULT_BOUND + 3, 1000));
    const refused = [await hostile.next(), await hostile.next(), await hostile.next()].map((m) => expectOverflow(m, victim.endpoint.nodeId));
    // Which three were refused depends on the order the transport placed them in; three of them.
    expect(new Set(refused.map((e) => e.requestIndex)).size).toBe(3);
    expect(victim.mgr.counters.refused).toBe(3);
    expect(victim.mgr.heldRequests(hostile.endpoint.nodeId)).toBe(DEFAULT_BOUND);
    expect(victim.mgr.stepCount).toBe(DEFAULT_BOUND);

    await transfer(1, 'meanwhile');
    expect(victim.mgr.stepCount).toBe(DEFAULT_BOUND + 1);

    const gone = lost(victim.endpoint, hostile.endpoint.nodeId);
    await hostile.endpoint.close();
    await gone;
    expect(victim.mgr.heldRequests()).toBe(0);
    expect(victim.mgr.stepCount).toBe(1); // the application's step 1
    await transfer(1, 'after');
  });

  test("the bound counts per peer: another peer's recvs and sends go on while the hostile one is at it", async () => {
    const { victim, friend, hostile, transfer } = await setUp({ maxRequestsPerPeer: 16 });
    await hostile.request(victim, ownSteps(16 + 5, 100));
    for (let i = 0; i < 5; i++) expectOverflow(await hostile.next(), victim.endpoint.nodeId);
    expect(victim.mgr.counters.refused).toBe(5);
    expect(victim.mgr.heldRequests(hostile.endpoint.nodeId)).toBe(16);
    expect(victim.mgr.stepCount).toBe(16);

    // The legitimate peer may hold as many as the hostile one, in the victim's steps or its own.
    const names = Array.from({ length: 16 }, (_, i) => `t${i}`);
    const key = (name: string) => createKey(device(victim.task), victim.endpoint.incarnation, device(friend.task), name);
    const received = names.map((name) => friend.mgr.find(1).recv(key(name), WAIT));
    await until('the friend requests are held', () => victim.mgr.heldRequests(friend.endpoint.nodeId) === 16);
    names.forEach((name, i) => victim.mgr.find(1).send(key(name), floats([8], i)));
    const tensors = await Promise.all(received);
    tensors.forEach(({ tensor }, i) => expect(bytesOf(tensor).equals(bytesOf(floats([8], i)))).toBe(true));
    expect(victim.mgr.heldRequests(friend.endpoint.nodeId)).toBe(0);
    await transfer(2, 'and-more');
    expect(victim.mgr.counters.refused).toBe(5);
  });

  test('a recv past the sender\'s bound rejects with ERR_RVMA_OVERFLOW through the API; the others complete', async () => {
    const { victim, friend } = await setUp({ maxRequestsPerPeer: 3 });
    const key = (name: string) => createKey(device(victim.task), victim.endpoint.incarnation, device(friend.task), name);
    const names = ['a', 'b', 'c', 'd', 'e'];
    const outcomes = names.map((name) => friend.mgr.find(1).recv(key(name), WAIT).then(
      () => 'received',
      (error: RvmaError) => error,
    ));
    await until('two requests are refused', () => victim.mgr.counters.refused === 2);
    names.forEach((name, i) => victim.mgr.find(1).send(key(name), floats([4], i)));
    const settled = await Promise.all(outcomes);
    expect(settled.filter((o) => o === 'received')).toHaveLength(3);
    const errors = settled.filter((o): o is RvmaError => o !== 'received');
    expect(errors).toHaveLength(2);
    for (const error of errors) await expectRejects(Promise.reject(error), 'ERR_RVMA_OVERFLOW', /maxRequestsPerPeer/);
    expect(friend.mgr.counters.errors).toBe(2);
  });
});

describe('steps that only a peer\'s requests made', () => {
  test("go when the peer withdraws its requests (TENSOR_CANCEL); the application's steps stay and still serve it", async () => {
    const { victim, hostile, transfer } = await setUp({});
    victim.mgr.find(1); // the application's before any request names it
    // Steps 2001 and 2002: the hostile peer's only. Step 1: the application's. Step 3: found by the application later.
    await hostile.request(victim, [[1, 2001], [2, 2002], [3, 1], [4, 3]]);
    await until('four requests are held', () => victim.mgr.heldRequests(hostile.endpoint.nodeId) === 4);
    expect(victim.mgr.stepCount).toBe(4);
    victim.mgr.find(3);

    const from = { from: hostile.endpoint.nodeId, fromIncarnation: hostile.endpoint.incarnation };
    for (const requestIndex of [1, 2, 3, 4]) {
      await hostile.endpoint.put(victim.endpoint.nodeId, CONTROL_VADDR, encode({ kind: Kind.TensorCancel, ...from, requestIndex }), WAIT);
    }
    await until('the four requests are withdrawn', () => victim.mgr.counters.withdrawn === 4);
    expect(victim.mgr.heldRequests()).toBe(0);
    expect(victim.mgr.stepCount).toBe(2); // 1 and 3
    await transfer(1, 'one');
    await transfer(3, 'three');
    expect(victim.mgr.stepCount).toBe(2);
  });

  test('of a child process SIGKILLed with requests past the bound: its held requests and the steps they made go', async () => {
    const { victim, transfer } = await setUp({ maxRequestsPerPeer: 8 });
    const agent = await startAgent(children, 'hostile', { provider: 'tcp' });
    await agent.child.request({ cmd: 'connect', address: victim.endpoint.address });
    const from = { from: agent.nodeId, fromIncarnation: agent.incarnation };
    for (let requestIndex = 1; requestIndex <= 12; requestIndex++) {
      const bytes = encode({
        kind: Kind.TensorRequest,
        ...from,
        key: createKey(device(victim.task), victim.endpoint.incarnation, device('/job:elsewhere/replica:0/task:0'), `never-sent-${requestIndex}`),
        stepId: String(500 + requestIndex),
        requestIndex,
        dataVaddr: 0n,
        cachedMeta: null,
        pushVaddr: 0n,
      });
      await agent.child.request({ cmd: 'put', target: victim.endpoint.address, vaddr: CONTROL_VADDR.toString(), hex: Buffer.from(bytes).toString('hex') });
    }
    await until('four requests are refused', () => victim.mgr.counters.refused === 4);
    expect(victim.mgr.heldRequests(agent.nodeId)).toBe(8);
    expect(victim.mgr.stepCount).toBe(8);

    const gone = lost(victim.endpoint, agent.nodeId);
    expect((await agent.child.kill()).signal).toBe('SIGKILL');
    await gone;
    expect(victim.mgr.heldRequests()).toBe(0);
    expect(victim.mgr.stepCount).toBe(0);
    await transfer(1, 'after-the-kill');
  });
});

describe('control messages to a peer that takes none', () => {
  test('stop at the bound: the rest are not sent (counted in unsent), the waiting ones land once it takes them, other peers are unaffected', async () => {
    // sendTimeoutMs longer than the test needs: the answers to the hostile peer keep waiting.
    const { victim, hostile, transfer } = await setUp({ maxRequestsPerPeer: 4, sendTimeoutMs: 25_000 }, 0);
    await hostile.request(victim, ownSteps(4 + 10, 300));
    await until('ten requests are refused', () => victim.mgr.counters.refused === 10);
    // Ten refusals to tell: four wait for the hostile peer's mailbox, six were never sent.
    expect(victim.mgr.counters.unsent).toBe(6);
    expect(victim.mgr.heldRequests(hostile.endpoint.nodeId)).toBe(4);

    await transfer(1, 'meanwhile');
    expect(victim.mgr.counters.unsent).toBe(6);

    for (let i = 0; i < 4; i++) hostile.control.post(8192);
    const waited = [await hostile.next(), await hostile.next(), await hostile.next(), await hostile.next()];
    for (const m of waited) expectOverflow(m, victim.endpoint.nodeId);
    expect(new Set(waited.map((m) => (m as ErrorStatus).requestIndex)).size).toBe(4);
  });

  test('a meta response that cannot be sent puts the tensor its request took back into the step, for the next recv', async () => {
    const { victim, friend, hostile } = await setUp({ sendTimeoutMs: 500 }, 0);
    const key = createKey(device(victim.task), victim.endpoint.incarnation, device(friend.task), 'taken');
    const from = { from: hostile.endpoint.nodeId, fromIncarnation: hostile.endpoint.incarnation };
    // No cached meta: the tensor is copied and answered with META_DATA_RESPONSE, which the
    // hostile peer never takes.
    const request = { kind: Kind.TensorRequest, ...from, key, stepId: '1', requestIndex: 1, dataVaddr: 0n, cachedMeta: null, pushVaddr: 0n } as const;
    await hostile.endpoint.put(victim.endpoint.nodeId, CONTROL_VADDR, encode(request), WAIT);
    await until('the request is held', () => victim.mgr.heldRequests(hostile.endpoint.nodeId) === 1);
    const expected = floats([32], 5);
    victim.mgr.find(1).send(key, expected);
    await until('the unanswered request is dropped', () => victim.mgr.heldRequests(hostile.endpoint.nodeId) === 0);
    const { tensor } = await friend.mgr.find(1).recv(key, WAIT);
    expect(bytesOf(tensor).equals(bytesOf(expected))).toBe(true);
  });
});
