// The rendezvous API's argument checks and lifecycle: bad arguments are
// ERR_RVMA_INVALID_ARGUMENT naming the call (promise-returning calls reject, never throw),
// a closed manager refuses work and fails what was pending with ERR_RVMA_CLOSED.
import { MemoryDirectoryHub, RendezvousMgr, createKey } from '../../src';
import { expectFails, expectRejects, expectThrows } from '../helpers/errors';
import { device, floats, nextServed, task, trackRendezvous, uniqueJob } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const INVALID = 'ERR_RVMA_INVALID_ARGUMENT';
const WAIT = { timeout: 10_000 };
const loose = (value: unknown) => value as never;

async function oneNode() {
  const hub = new MemoryDirectoryHub();
  const job = uniqueJob('api');
  // Hosts tasks 0 and 1, so keys between them are local.
  const node = await rendezvous.node(hub, task(job, 0), 'auto', { tasks: [task(job, 0), task(job, 1)] });
  const key = (name: string, src = 0, dst = 1) => createKey(device(task(job, src)), node.endpoint.incarnation, device(task(job, dst)), name);
  return { hub, job, node, key };
}

describe('RendezvousMgr.create', () => {
  test.each<[string, unknown, RegExp]>([
    ['options not an object', 'validate', /options must be an object/],
    ['an unknown option', { tasks: [], valdiate: true }, /unknown option "valdiate"/],
    ['tasks not strings', { tasks: [1] }, /tasks must be strings/],
    ['tasks not an array', { tasks: '/job:a/replica:0/task:0' }, /tasks must be strings/],
    ['beforeContentPut not a function', { beforeContentPut: 'flip' }, /beforeContentPut must be a function/],
    ['zero control buffers', { controlBuffers: 0 }, /controlBuffers/],
    ['control buffers too small', { controlBufferBytes: 100 }, /controlBufferBytes/],
    ['zero send timeout', { sendTimeoutMs: 0 }, /sendTimeoutMs/],
  ])('%s', async (_, options, message) => {
    const { node } = await oneNode();
    // The refused managers never open a control mailbox: the endpoint's own manager is untouched.
    expectThrows(() => RendezvousMgr.create(node.endpoint, loose(options)), INVALID, new RegExp(`^RendezvousMgr\\.create: .*${message.source}`));
  });

  test('not an endpoint', () => {
    expectThrows(() => RendezvousMgr.create(loose({ labels: [] })), INVALID, /endpoint must be an Endpoint/);
  });

  test('a second manager on the same endpoint is refused: the control mailbox is taken', async () => {
    const { node, key } = await oneNode();
    expectThrows(() => RendezvousMgr.create(node.endpoint), 'ERR_RVMA_MAILBOX_EXISTS');
    // The first one still works.
    const rv = node.mgr.find(1);
    rv.send(key('a'), floats([1], 1));
    expect((await rv.recv(key('a'), WAIT)).tensor.shape).toEqual([1]);
  });
});

describe('find / cleanup', () => {
  test.each<[string, unknown]>([
    ['negative', -1],
    ['fractional', 1.5],
    ['beyond u64', 1n << 64n],
    ['a string', '1'],
  ])('find with a step that is %s', async (_, step) => {
    const { node } = await oneNode();
    expectThrows(() => node.mgr.find(loose(step)), INVALID, /stepId/);
  });

  test('one rendezvous per step, number or bigint alike; cleanup drops it and the next find starts afresh', async () => {
    const { node } = await oneNode();
    const rv = node.mgr.find(3);
    expect(node.mgr.find(3n)).toBe(rv);
    expect(rv.stepId).toBe(3n);
    expect(node.mgr.find((1n << 64n) - 1n).stepId).toBe((1n << 64n) - 1n);
    node.mgr.cleanup(3);
    expect(rv.abortError).toMatchObject({ code: 'ERR_RVMA_ABORTED' });
    const fresh = node.mgr.find(3);
    expect(fresh).not.toBe(rv);
    expect(fresh.abortError).toBeUndefined();
    node.mgr.cleanup(12345); // a step never used: nothing to do
  });
});

describe('Rendezvous.send / recv arguments', () => {
  test('send of a key whose source task is not hosted here', async () => {
    const { node, key } = await oneNode();
    expectThrows(() => node.mgr.find(1).send(key('x', 7, 1), floats([1], 1)), INVALID, /^Rendezvous\.send: .*source task/);
  });

  test('recv of a key whose destination task is not hosted here rejects (does not throw)', async () => {
    const { node, key } = await oneNode();
    await expectFails(() => node.mgr.find(1).recv(key('x', 0, 7)), INVALID, /^Rendezvous\.recv: .*destination task/);
  });

  test('malformed keys and options', async () => {
    const { node, key } = await oneNode();
    const rv = node.mgr.find(1);
    expectThrows(() => rv.send('no;key', floats([1], 1)), INVALID, /^parseKey: /);
    await expectFails(() => rv.recv('no;key'), INVALID, /^parseKey: /);
    expectThrows(() => rv.send(key('a'), floats([1], 1), loose({ dead: true })), INVALID, /unknown option "dead"/);
    await expectFails(() => rv.recv(key('a'), loose({ timeout: -1 })), INVALID, /timeout/);
    await expectFails(() => rv.recv(key('a'), loose({ signal: 'stop' })), INVALID, /signal/);
  });

  test('the same key sent twice in a step is refused; in the next step it is free again', async () => {
    const { node, key } = await oneNode();
    node.mgr.find(1).send(key('a'), floats([1], 1));
    expectThrows(() => node.mgr.find(1).send(key('a'), floats([1], 2)), INVALID, /already sent in step 1/);
    node.mgr.find(2).send(key('a'), floats([1], 3));
  });

  test('a second local recv of the same key while the first waits is refused', async () => {
    const { node, key } = await oneNode();
    const rv = node.mgr.find(1);
    const first = rv.recv(key('a'), WAIT);
    await expectRejects(rv.recv(key('a'), WAIT), INVALID, /already being received/);
    const t = floats([2], 4);
    rv.send(key('a'), t);
    expect((await first).tensor.data).toEqual(t.data);
  });
});

describe('close', () => {
  test('close fails pending local and remote recvs with ERR_RVMA_CLOSED, then refuses find', async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob('api');
    const sender = await rendezvous.node(hub, task(job, 0), 'auto');
    const receiver = await rendezvous.node(hub, task(job, 1), 'auto', { tasks: [task(job, 1), task(job, 2)] });
    const remoteKey = createKey(device(task(job, 0)), sender.endpoint.incarnation, device(task(job, 1)), 'r');
    const localKey = createKey(device(task(job, 2)), receiver.endpoint.incarnation, device(task(job, 1)), 'l');
    const served = nextServed(sender.mgr.find(1));
    const remote = receiver.mgr.find(1).recv(remoteKey, WAIT);
    const local = receiver.mgr.find(1).recv(localKey, WAIT);
    await served;
    await receiver.mgr.close();
    await expectRejects(remote, 'ERR_RVMA_CLOSED');
    await expectRejects(local, 'ERR_RVMA_CLOSED');
    expectThrows(() => receiver.mgr.find(2), 'ERR_RVMA_CLOSED', /closed/);
    await receiver.mgr.close(); // idempotent
  });

  test('closing the endpoint under a manager fails its pending remote recv (no hang until the timeout)', async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob('api');
    const sender = await rendezvous.node(hub, task(job, 0), 'auto');
    const receiver = await rendezvous.node(hub, task(job, 1), 'auto');
    const k = createKey(device(task(job, 0)), sender.endpoint.incarnation, device(task(job, 1)), 'r');
    const served = nextServed(sender.mgr.find(1));
    const got = receiver.mgr.find(1).recv(k, { timeout: 3000 });
    await served;
    await receiver.endpoint.close();
    await expectRejects(got, 'ERR_RVMA_CLOSED');
  });
});
