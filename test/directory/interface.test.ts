// The Directory contract, checked against every implementation: what one node publishes
// (record, names) is visible to the others, changes arrive as watch events, and a second
// incarnation of a live node is refused.
import { randomBytes } from 'node:crypto';
import { type Directory, MemoryDirectory, MemoryDirectoryHub, type NodeRecord, RedisDirectory } from '../../src/directory';
import { type RedisServer, WatchReader, describeRedis, redisAvailability, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';
import { codeOf, nodeRecord } from '../helpers/directory';

// Nothing here waits for a lease to lapse (see redis-processes and redis-lifecycle for
// that), so leases are long enough that a stalled machine cannot lapse them mid-test.
const TTL_MS = 3000;
const WATCH_INTERVAL_MS = 150;
const EVENT_TIMEOUT_MS = 5000;

const run = randomBytes(3).toString('hex');
let counter = 0;
const uniqueId = (label: string) => `${label}-${run}-${++counter}`;


const byId = (a: NodeRecord, b: NodeRecord) => a.nodeId.localeCompare(b.nodeId);


interface Backend {
  name: string;
  beforeAll(): Promise<void>;
  afterAll(): Promise<void>;
  /** Called before each test: a fresh namespace, so tests never see each other's nodes. */
  fresh(): void;
  make(): Promise<Directory>;
}

const memoryBackend = (): Backend => {
  let hub = new MemoryDirectoryHub();
  return {
    name: 'MemoryDirectory',
    async beforeAll() {},
    async afterAll() {},
    fresh() {
      hub = new MemoryDirectoryHub();
    },
    async make() {
      return new MemoryDirectory(hub);
    },
  };
};

const redisBackend = (): Backend => {
  let server: RedisServer | undefined;
  let cluster = '';
  return {
    name: 'RedisDirectory',
    async beforeAll() {
      server = await startRedis();
    },
    async afterAll() {
      await server?.stop();
    },
    fresh() {
      cluster = uniqueId('iface');
    },
    async make() {
      return RedisDirectory.connect({ url: server!.url, cluster, ttlMs: TTL_MS, watchIntervalMs: WATCH_INTERVAL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    },
  };
};

function interfaceSuite(backend: Backend): void {
  const open: Directory[] = [];
  const readers: WatchReader[] = [];
  const make = async () => {
    const directory = await backend.make();
    open.push(directory);
    return directory;
  };
  /**
   * Starts watching and returns once the watch has taken its first snapshot: a node that
   * registers after this is reported as a join. (The list() queues behind the watcher's own
   * snapshot query on the same connection.)
   */
  const watchFrom = async (directory: Directory) => {
    const reader = new WatchReader(directory);
    readers.push(reader);
    await directory.list();
    return reader;
  };

  beforeAll(() => backend.beforeAll());
  afterAll(() => backend.afterAll());
  beforeEach(() => backend.fresh());
  afterEach(async () => {
    for (const reader of readers.splice(0)) reader.close();
    await Promise.all(open.splice(0).map((d) => d.close().catch(() => {})));
  });

  test('register, resolveNode, resolveLabel and list show every registered node', async () => {
    const [a, b, observer] = [await make(), await make(), await make()];
    const ra = nodeRecord(uniqueId('a'), { labels: ['/job:worker/replica:0/task:0'] });
    const rb = nodeRecord(uniqueId('b'), { labels: ['/job:ps/replica:0/task:0', 'gpu'] });
    await a.register(ra);
    await b.register(rb);

    expect(await observer.resolveNode(ra.nodeId)).toEqual(ra);
    expect(await observer.resolveNode(rb.nodeId)).toEqual(rb);
    expect(await observer.resolveNode(uniqueId('nobody'))).toBeUndefined();
    expect(await observer.resolveLabel('/job:worker/replica:0/task:0')).toEqual(ra);
    expect(await observer.resolveLabel('gpu')).toEqual(rb);
    expect(await observer.resolveLabel('/job:worker/replica:0/task:9')).toBeUndefined();
    expect((await observer.list()).sort(byId)).toEqual([ra, rb].sort(byId));
    // A node sees itself too.
    expect(await a.resolveNode(ra.nodeId)).toEqual(ra);
  });

  test('bindName, resolveName and unbindName', async () => {
    const [a, b, observer] = [await make(), await make(), await make()];
    const ra = nodeRecord(uniqueId('a'));
    const rb = nodeRecord(uniqueId('b'));
    await a.register(ra);
    await b.register(rb);
    const inbox = uniqueId('inbox');
    const big = uniqueId('big');

    await a.bindName(inbox, 0x10000n);
    // vaddrs are u64: the top of the range must survive the round trip exactly.
    await a.bindName(big, 0xffff_ffff_ffff_fff0n);
    expect(await observer.resolveName(inbox)).toEqual({ name: inbox, nodeId: ra.nodeId, incarnation: ra.incarnation, vaddr: 0x10000n });
    expect((await observer.resolveName(big))?.vaddr).toBe(0xffff_ffff_ffff_fff0n);
    expect(await observer.resolveName(uniqueId('unbound'))).toBeUndefined();

    // The owner may move its name to another mailbox.
    await a.bindName(inbox, 0x20000n);
    expect((await observer.resolveName(inbox))?.vaddr).toBe(0x20000n);

    // Another live node may neither take the name nor unbind it.
    expect(await codeOf(b.bindName(inbox, 0x30000n))).toBe('ERR_RVMA_DIRECTORY_CONFLICT');
    expect(await codeOf(b.unbindName(inbox))).toBe('ERR_RVMA_DIRECTORY_CONFLICT');
    expect(await observer.resolveName(inbox)).toMatchObject({ nodeId: ra.nodeId, vaddr: 0x20000n });

    await a.unbindName(inbox);
    expect(await observer.resolveName(inbox)).toBeUndefined();
    expect((await observer.resolveName(big))?.nodeId).toBe(ra.nodeId);
    // Unbinding a name that is not bound is not an error.
    await a.unbindName(inbox);

    // Once free, the other node can have it.
    await b.bindName(inbox, 0x30000n);
    expect(await observer.resolveName(inbox)).toMatchObject({ nodeId: rb.nodeId, incarnation: rb.incarnation, vaddr: 0x30000n });
  });

  test('two nodes that happen to share an incarnation number cannot take or unbind each other\'s names', async () => {
    const [a, b, observer] = [await make(), await make(), await make()];
    const ra = nodeRecord(uniqueId('a'));
    const rb = nodeRecord(uniqueId('b'), { incarnation: ra.incarnation });
    await a.register(ra);
    await b.register(rb);
    const name = uniqueId('inbox');
    await a.bindName(name, 0x10000n);

    expect(await codeOf(b.bindName(name, 0x20000n))).toBe('ERR_RVMA_DIRECTORY_CONFLICT');
    expect(await codeOf(b.unbindName(name))).toBe('ERR_RVMA_DIRECTORY_CONFLICT');
    expect(await observer.resolveName(name)).toEqual({ name, nodeId: ra.nodeId, incarnation: ra.incarnation, vaddr: 0x10000n });
  });

  test('names vanish when their node deregisters or closes, and can then be bound by others', async () => {
    const [a, b, c, observer] = [await make(), await make(), await make(), await make()];
    const ra = nodeRecord(uniqueId('a'));
    const rb = nodeRecord(uniqueId('b'));
    await a.register(ra);
    await b.register(rb);
    const [n1, n2, n3] = [uniqueId('n1'), uniqueId('n2'), uniqueId('n3')];
    await a.bindName(n1, 0x10000n);
    await a.bindName(n2, 0x10001n);
    await b.bindName(n3, 0x10002n);

    await a.deregister();
    expect(await observer.resolveNode(ra.nodeId)).toBeUndefined();
    expect(await observer.resolveName(n1)).toBeUndefined();
    expect(await observer.resolveName(n2)).toBeUndefined();
    expect((await observer.list()).map((n) => n.nodeId)).toEqual([rb.nodeId]);
    // Only a's names went.
    expect((await observer.resolveName(n3))?.nodeId).toBe(rb.nodeId);

    await b.close();
    expect(await observer.resolveName(n3)).toBeUndefined();
    expect(await observer.list()).toEqual([]);

    const rc = nodeRecord(uniqueId('c'));
    await c.register(rc);
    await c.bindName(n1, 0x10003n);
    expect(await observer.resolveName(n1)).toMatchObject({ nodeId: rc.nodeId, vaddr: 0x10003n });
  });

  test('listNames lists the live nodes\' names by name, and drops them with their node', async () => {
    const [a, b, observer] = [await make(), await make(), await make()];
    const ra = nodeRecord(uniqueId('a'));
    const rb = nodeRecord(uniqueId('b'));
    await a.register(ra);
    await b.register(rb);
    const [first, second, third] = ['1', '2', '3'].map((n) => uniqueId(`name${n}`));
    await b.bindName(third, 0x30000n);
    await a.bindName(first, 0x10000n);
    await a.bindName(second, 0xffff_ffff_ffff_fff0n);
    expect(await observer.listNames!()).toEqual([
      { name: first, nodeId: ra.nodeId, incarnation: ra.incarnation, vaddr: 0x10000n },
      { name: second, nodeId: ra.nodeId, incarnation: ra.incarnation, vaddr: 0xffff_ffff_ffff_fff0n },
      { name: third, nodeId: rb.nodeId, incarnation: rb.incarnation, vaddr: 0x30000n },
    ]);
    await a.unbindName(first);
    await b.deregister();
    expect((await observer.listNames!()).map((n) => n.name)).toEqual([second]);
  });

  test('watch() yields join, update (labels changed) and leave', async () => {
    const [watcher, a] = [await make(), await make()];
    const reader = await watchFrom(watcher);
    const ra = nodeRecord(uniqueId('a'), { labels: ['/job:worker/replica:0/task:0'] });

    await a.register(ra);
    const join = await reader.event('join', ra.nodeId, ra.incarnation, EVENT_TIMEOUT_MS);
    expect(join.node).toEqual(ra);

    const relabelled = { ...ra, labels: ['/job:worker/replica:0/task:0', 'chief'] };
    await a.register(relabelled);
    const update = await reader.event('update', ra.nodeId, ra.incarnation, EVENT_TIMEOUT_MS);
    expect(update.node.labels).toEqual(relabelled.labels);
    expect(await watcher.resolveLabel('chief')).toEqual(relabelled);

    await a.deregister();
    const leave = await reader.event('leave', ra.nodeId, ra.incarnation, EVENT_TIMEOUT_MS);
    expect(leave.node.nodeId).toBe(ra.nodeId);
    // Nothing about this node between join and leave except the one update.
    expect(reader.seen.filter((s) => s.endsWith(`:${ra.nodeId}`))).toEqual([
      `join:${ra.nodeId}`,
      `update:${ra.nodeId}`,
      `leave:${ra.nodeId}`,
    ]);
  });

  test('watch() reports a restarted node (new incarnation) as leave of the old, join of the new', async () => {
    const [watcher, first, second] = [await make(), await make(), await make()];
    const reader = await watchFrom(watcher);
    const old = nodeRecord(uniqueId('restarting'));
    await first.register(old);
    await reader.event('join', old.nodeId, old.incarnation, EVENT_TIMEOUT_MS);
    await first.close();
    const renewed = nodeRecord(old.nodeId);
    await second.register(renewed);
    await reader.event('leave', old.nodeId, old.incarnation, EVENT_TIMEOUT_MS);
    const join = await reader.event('join', old.nodeId, renewed.incarnation, EVENT_TIMEOUT_MS);
    expect(join.node).toEqual(renewed);
  });

  test('an impostor (same node id, other incarnation) is refused while the first is alive', async () => {
    const [owner, impostor, observer] = [await make(), await make(), await make()];
    const real = nodeRecord(uniqueId('contested'), { labels: ['/job:worker/replica:0/task:3'] });
    await owner.register(real);
    const fake = nodeRecord(real.nodeId, { labels: ['/job:worker/replica:0/task:4'] });

    await expect(impostor.register(fake)).rejects.toMatchObject({ code: 'ERR_RVMA_DIRECTORY_CONFLICT' });
    expect(await observer.resolveNode(real.nodeId)).toEqual(real);
    expect(await observer.resolveLabel('/job:worker/replica:0/task:4')).toBeUndefined();
    // The refused instance is not registered; the owner is unaffected.
    expect(await codeOf(impostor.bindName(uniqueId('n'), 0x10000n))).toBe('ERR_RVMA_NOT_REGISTERED');
    const name = uniqueId('owned');
    await owner.bindName(name, 0x10000n);
    expect(await observer.resolveName(name)).toMatchObject({ nodeId: real.nodeId, incarnation: real.incarnation });
    // The owner's own re-registration (same incarnation) is still fine.
    await owner.register({ ...real, labels: ['/job:worker/replica:0/task:3', 'x'] });

    // Once the owner is gone, the new incarnation may register.
    await owner.deregister();
    await impostor.register(fake);
    expect(await observer.resolveNode(real.nodeId)).toEqual(fake);
  });

  test('bindName before register (and after deregister) rejects with ERR_RVMA_NOT_REGISTERED', async () => {
    const a = await make();
    expect(await codeOf(a.bindName(uniqueId('early'), 0x10000n))).toBe('ERR_RVMA_NOT_REGISTERED');
    const ra = nodeRecord(uniqueId('a'));
    await a.register(ra);
    await a.bindName(uniqueId('ok'), 0x10000n);
    await a.deregister();
    expect(await codeOf(a.bindName(uniqueId('late'), 0x10000n))).toBe('ERR_RVMA_NOT_REGISTERED');
    // deregister twice is harmless.
    await a.deregister();
  });

  test('a watch iterator ends when its AbortSignal aborts', async () => {
    const watcher = await make();
    const controller = new AbortController();
    const iterator = watcher.watch({ signal: controller.signal });
    const pending = iterator.next();
    controller.abort();
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
    await expect(iterator.next()).resolves.toMatchObject({ done: true });

    // for-await over an aborted watch ends too (no events are lost to it: none happened).
    const late = new AbortController();
    const events: string[] = [];
    const loop = (async () => {
      for await (const e of watcher.watch({ signal: late.signal })) events.push(e.type);
    })();
    late.abort();
    await loop;
    expect(events).toEqual([]);
  });

  test('a watch started with an already-aborted signal is done at once', async () => {
    const watcher = await make();
    const aborted = new AbortController();
    aborted.abort();
    const iterator = watcher.watch({ signal: aborted.signal });
    await expect(iterator.next()).resolves.toEqual({ value: undefined, done: true });
    // The directory still works and other watches still get events.
    const reader = await watchFrom(watcher);
    const ra = nodeRecord(uniqueId('after-abort'));
    const a = await make();
    await a.register(ra);
    await reader.event('join', ra.nodeId, ra.incarnation, EVENT_TIMEOUT_MS);
  });

  test('close() ends open watches and refuses later calls with ERR_RVMA_CLOSED', async () => {
    const watcher = await make();
    const iterator = watcher.watch();
    const pending = iterator.next();
    await watcher.close();
    await expect(pending).resolves.toMatchObject({ done: true });
    expect(await codeOf(watcher.register(nodeRecord(uniqueId('x'))))).toBe('ERR_RVMA_CLOSED');
    expect(() => watcher.watch()).toThrow(expect.objectContaining({ code: 'ERR_RVMA_CLOSED' }));
    await watcher.close(); // idempotent
  });
}

const availability = redisAvailability();
const backends: [string, Backend][] = [['MemoryDirectory', memoryBackend()]];
if (availability.available) backends.push(['RedisDirectory', redisBackend()]);

describe.each(backends)('%s: Directory interface', (_name, backend) => interfaceSuite(backend));

// Without Redis: fail under CI, otherwise skip with the reason printed.
if (!availability.available) describeRedis('RedisDirectory: Directory interface', () => interfaceSuite(redisBackend()));
