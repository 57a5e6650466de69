// Endpoints created without a directory option share the process's MemoryDirectory: they
// find each other by node id, task label and bound name, and a put meant for an earlier
// incarnation of a node id never reaches its successor.
import { randomBytes } from 'node:crypto';
import { Endpoint, type EndpointOptions, type Mailbox } from '../../src';
import { MemoryDirectory, MemoryDirectoryHub } from '../../src/directory';
import { WatchReader } from '../helpers/redis';

const VADDR = 0x10000n;
const run = randomBytes(3).toString('hex');
let counter = 0;
// Node ids and labels are process-wide (jest may run several files in one worker).
const uniqueId = (label: string) => `${label}-${run}-${++counter}`;
const uniqueTask = (job: string) => `/job:${job}-${run}/replica:0/task:${++counter}`;

const open: Endpoint[] = [];
async function create(options: EndpointOptions = {}): Promise<Endpoint> {
  const endpoint = await Endpoint.create({ nodeId: uniqueId('node'), ...options });
  open.push(endpoint);
  return endpoint;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'placed';
  } catch (error) {
    return (error as { code?: string }).code ?? `no code: ${String(error)}`;
  }
}

/** An 'ops' mailbox: each put completes on its own. */
function inbox(endpoint: Endpoint, buffers = 4): Mailbox {
  const mailbox = endpoint.openMailbox(VADDR, { epoch: 'ops', maxBuffers: buffers });
  for (let i = 0; i < buffers; i++) mailbox.post(256);
  return mailbox;
}

async function received(mailbox: Mailbox): Promise<Buffer> {
  const c = await mailbox.next({ timeout: 2000 });
  return Buffer.from(c.buffer.subarray(0, c.bytes));
}

describe('Endpoints on the process MemoryDirectory', () => {
  test('an endpoint registers itself: its record is visible to every MemoryDirectory of the process', async () => {
    const task = uniqueTask('worker');
    const endpoint = await create({ labels: [task] });
    const view = new MemoryDirectory();
    expect(await view.resolveNode(endpoint.nodeId)).toMatchObject({
      nodeId: endpoint.nodeId,
      incarnation: endpoint.incarnation,
      pid: process.pid,
      labels: [task],
      addresses: {},
    });
    expect(await view.resolveLabel(task)).toMatchObject({ nodeId: endpoint.nodeId });
    expect((await view.list()).map((n) => n.nodeId)).toContain(endpoint.nodeId);

    await endpoint.close();
    expect(await view.resolveNode(endpoint.nodeId)).toBeUndefined();
    expect(await view.resolveLabel(task)).toBeUndefined();
  });

  test('puts by task label, by node id and by name reach the right endpoint with the exact bytes', async () => {
    const task = uniqueTask('ps');
    const receiver = await create({ labels: [task] });
    const bystander = await create({ labels: [uniqueTask('ps')] });
    const sender = await create();
    const mailbox = inbox(receiver);
    const other = inbox(bystander);

    const byLabel = randomBytes(100);
    await sender.put(task, VADDR, byLabel, { timeout: 2000 });
    expect(await received(mailbox)).toEqual(byLabel);

    const byId = randomBytes(37);
    await sender.put(receiver.nodeId, VADDR, byId, { timeout: 2000 });
    expect(await received(mailbox)).toEqual(byId);

    const name = uniqueId('inbox');
    await receiver.bindName(name, VADDR);
    const byName = randomBytes(256);
    await sender.putNamed(name, byName, { timeout: 2000 });
    expect(await received(mailbox)).toEqual(byName);

    // Nothing strayed to the other endpoint.
    await expect(other.next({ timeout: 50 })).rejects.toMatchObject({ code: 'ERR_RVMA_TIMEOUT' });
  });

  test('two endpoints with the same labels both register; a label put reaches exactly one, then the other once it closes', async () => {
    const task = uniqueTask('worker');
    const first = await create({ labels: [task, 'shared'] });
    const second = await create({ labels: [task, 'shared'] });
    const sender = await create();
    const boxes = new Map([
      [first.nodeId, inbox(first)],
      [second.nodeId, inbox(second)],
    ]);
    const view = new MemoryDirectory();
    const holders = (await view.list()).filter((n) => n.labels.includes(task)).map((n) => n.nodeId);
    expect(holders.sort()).toEqual([first.nodeId, second.nodeId].sort());

    const owner = (await view.resolveLabel(task))!.nodeId;
    const survivor = owner === first.nodeId ? second : first;
    const payload = randomBytes(16);
    await sender.put(task, VADDR, payload, { timeout: 2000 });
    expect(await received(boxes.get(owner)!)).toEqual(payload);
    await expect(boxes.get(survivor.nodeId)!.next({ timeout: 50 })).rejects.toMatchObject({ code: 'ERR_RVMA_TIMEOUT' });

    // The label's holder goes away: the cached route fails once, then the label resolves afresh.
    await open.find((e) => e.nodeId === owner)!.close();
    expect((await view.resolveLabel(task))?.nodeId).toBe(survivor.nodeId);
    const stale = await codeOf(sender.put(task, VADDR, randomBytes(4), { timeout: 2000 }));
    const next = randomBytes(24);
    const fresh = await codeOf(sender.put(task, VADDR, next, { timeout: 2000 }));
    expect({ stale, fresh }).toEqual({ stale: 'ERR_RVMA_PEER_LOST', fresh: 'placed' });
    expect(await received(boxes.get(survivor.nodeId)!)).toEqual(next);
  });

  test('a put cached for an old incarnation of a node id fails ERR_RVMA_PEER_LOST; the next one reaches the new endpoint', async () => {
    const nodeId = uniqueId('restarting');
    const sender = await create();
    const old = await create({ nodeId });
    const oldBox = inbox(old);
    const first = randomBytes(10);
    await sender.put(nodeId, VADDR, first, { timeout: 2000 });
    expect(await received(oldBox)).toEqual(first);

    await old.close();
    const renewed = await create({ nodeId });
    expect(renewed.incarnation).not.toBe(old.incarnation);
    const newBox = inbox(renewed);

    const stale = await codeOf(sender.put(nodeId, VADDR, randomBytes(10), { timeout: 2000 }));
    const next = randomBytes(11);
    const fresh = await codeOf(sender.put(nodeId, VADDR, next, { timeout: 2000 }));
    expect({ stale, fresh }).toEqual({ stale: 'ERR_RVMA_PEER_LOST', fresh: 'placed' });
    // Exactly the fresh put arrived; the stale one never did.
    expect(await received(newBox)).toEqual(next);
    await expect(newBox.next({ timeout: 50 })).rejects.toMatchObject({ code: 'ERR_RVMA_TIMEOUT' });
  });

  test('a name disappears with its endpoint: putNamed then rejects with ERR_RVMA_NO_NAME', async () => {
    const receiver = await create();
    const sender = await create();
    const name = uniqueId('inbox');
    inbox(receiver);
    await receiver.bindName(name, VADDR);
    await sender.putNamed(name, randomBytes(8), { timeout: 2000 });
    await receiver.close();
    await expect(sender.putNamed(name, randomBytes(8), { timeout: 2000 })).rejects.toMatchObject({ code: 'ERR_RVMA_NO_NAME' });
    await expect(sender.putNamed(uniqueId('never'), randomBytes(8), { timeout: 2000 })).rejects.toMatchObject({
      code: 'ERR_RVMA_NO_NAME',
    });
  });

  test('a name bound by another live endpoint cannot be taken (ERR_RVMA_DIRECTORY_CONFLICT)', async () => {
    const [a, b] = [await create(), await create()];
    const name = uniqueId('inbox');
    await a.bindName(name, VADDR);
    await expect(b.bindName(name, VADDR)).rejects.toMatchObject({ code: 'ERR_RVMA_DIRECTORY_CONFLICT' });
    expect((await new MemoryDirectory().resolveName(name))?.nodeId).toBe(a.nodeId);
  });

  test('a put to a label no endpoint carries is refused, not hung', async () => {
    const sender = await create();
    const code = await codeOf(sender.put(uniqueTask('nobody'), VADDR, randomBytes(4), { timeout: 2000 }));
    expect(code).toBe('ERR_RVMA_NO_PEER');
  });

  test('a second endpoint with a node id already open in this process is refused', async () => {
    const nodeId = uniqueId('taken');
    const first = await create({ nodeId });
    const error = await Endpoint.create({ nodeId }).then(
      (e) => {
        open.push(e);
        return undefined;
      },
      (e: unknown) => e as { code?: string; message: string },
    );
    expect(error).toMatchObject({ code: 'ERR_RVMA_INVALID_ARGUMENT', message: expect.stringContaining(nodeId) });
    // The refused attempt did not disturb the first one's registration.
    expect(await new MemoryDirectory().resolveNode(nodeId)).toMatchObject({ incarnation: first.incarnation });
  });

  test('an endpoint given its own MemoryDirectory hub is invisible to the process directory', async () => {
    const hub = new MemoryDirectoryHub();
    const privateView = new MemoryDirectory(hub);
    const task = uniqueTask('isolated');
    const isolated = await create({ directory: new MemoryDirectory(hub), labels: [task] });
    expect(await new MemoryDirectory().resolveNode(isolated.nodeId)).toBeUndefined();
    expect(await privateView.resolveLabel(task)).toMatchObject({ nodeId: isolated.nodeId });
    // A directory passed in is the caller's: close() deregisters the endpoint but keeps it open.
    await isolated.close();
    expect(await privateView.resolveNode(isolated.nodeId)).toBeUndefined();
    const again = await create({ directory: privateView, labels: [task] });
    expect(await privateView.resolveLabel(task)).toMatchObject({ nodeId: again.nodeId });
  });

  test('watchers of the process directory see endpoints join and leave', async () => {
    const reader = new WatchReader(new MemoryDirectory());
    try {
      const endpoint = await create();
      const join = await reader.event('join', endpoint.nodeId, endpoint.incarnation, 2000);
      expect(join.node).toMatchObject({ pid: process.pid, labels: [] });
      await endpoint.close();
      await reader.event('leave', endpoint.nodeId, endpoint.incarnation, 2000);
    } finally {
      reader.close();
    }
  });
});
