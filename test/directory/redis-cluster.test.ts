// RedisDirectory on a sharded Redis (test/helpers/redis-cluster.ts: 3 primaries, 3 replicas):
// a namespace's keys share one hash slot; nodes register, bind names and watch through the
// cluster; when the primary serving that slot is killed with -9 its replica is promoted, and
// when the slot moves to another primary (resharding) the directory follows. In both, every
// node stays registered with its names, no node is reported lost, puts by cached routes go on,
// a watcher sees no node leave, and every resolve answers or fails typed.
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { DirectoryEvent, Endpoint, RedisDirectory, RegistrationLostInfo } from '../../src';
import { rvma } from '../helpers/cli';
import { codeOf, nodeRecord } from '../helpers/directory';
import { TEST_CONNECT_TIMEOUT_MS, describeRedis, pollFor } from '../helpers/redis';
import { ClusterSet, startCluster } from '../../examples/common/redis-cluster';

jest.setTimeout(120_000);
const run = randomBytes(3).toString('hex');
const VADDR = 0x5e000n;
/** A bound on a hang: a failover here takes the 2 s node timeout and an election. */
const FAILOVER_WITHIN_MS = 30_000;

describeRedis('RedisDirectory on a Redis Cluster', () => {
  let set: ClusterSet;
  const cleanup: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    set = await startCluster();
  }, 90_000);
  afterAll(async () => {
    await set?.stop();
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  // A lease that outlasts a failover (the 2 s node timeout, then the election) by more than a
  // heartbeat, as with Sentinel (docs/directory.md).
  const connect = async (namespace: string): Promise<RedisDirectory> => {
    const d = await RedisDirectory.connect({ clusterNodes: set.nodes, namespace, ttlMs: 15_000, watchIntervalMs: 500, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => d.close());
    return d;
  };

  test('the options: clusterNodes is checked, and it excludes url and sentinels; namespace and its former name cluster', async () => {
    const call = (o: object) => RedisDirectory.connect(o as never);
    expect(await codeOf(call({ clusterNodes: [] }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ clusterNodes: [{ host: '127.0.0.1', port: 0 }] }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ clusterNodes: set.nodes, url: 'redis://127.0.0.1:1' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ clusterNodes: set.nodes, sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'x' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ clusterNodes: set.nodes, namespace: 'a{b}' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ clusterNodes: set.nodes, namespace: 'a', cluster: 'b' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    const d = await connect(`opts-${run}`);
    expect(d.url).toBe(`cluster:${set.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`);
    // The former name still works, and names the same namespace.
    const former = await RedisDirectory.connect({ clusterNodes: set.nodes, cluster: `opts-${run}`, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => former.close());
    await d.register(nodeRecord(`opts-${run}`));
    expect((await former.resolveNode(`opts-${run}`))?.nodeId).toBe(`opts-${run}`);
  });

  test("a namespace's keys all live in one slot, served by one primary", async () => {
    const namespace = `slot-${run}`;
    const d = await connect(namespace);
    await d.register(nodeRecord(`n1-${run}`));
    await d.bindName(`name-${run}`, 0x10n);
    const slot = await set.slotOf(`rvma:{${namespace}}:members`);
    const client = new Redis({ host: '127.0.0.1', port: await set.primaryOf(slot), lazyConnect: true });
    cleanup.push(async () => client.disconnect());
    await client.connect();
    const keys = (await client.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
    expect(keys.sort()).toEqual([`rvma:{${namespace}}:members`, `rvma:{${namespace}}:name:name-${run}`, `rvma:{${namespace}}:names:n1-${run}`, `rvma:{${namespace}}:node:n1-${run}`]);
    // A second namespace is another slot (hash tags differ), and sees none of the first.
    const other = await connect(`slot-other-${run}`);
    expect(await other.resolveNode(`n1-${run}`)).toBeUndefined();
    expect(await other.list()).toEqual([]);
  });

  test('rvma directory ls --cluster-nodes reads a namespace on the cluster', async () => {
    const namespace = `cli-${run}`;
    const d = await connect(namespace);
    await d.register(nodeRecord(`cli-node-${run}`));
    await d.bindName(`cli-name-${run}`, 0x30000n);
    const nodes = set.nodes.slice(0, 2).map((n) => `${n.host}:${n.port}`).join(',');
    const result = await rvma(['directory', 'ls', '--cluster-nodes', nodes, '--namespace', namespace, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--json']);
    expect([result.status, result.stderr]).toEqual([0, '']);
    expect(JSON.parse(result.stdout)).toMatchObject([{ nodeId: `cli-node-${run}`, names: [{ name: `cli-name-${run}`, vaddr: '0x30000' }] }]);
    // With --redis as well, it says to give one of them.
    const both = await rvma(['directory', 'ls', '--cluster-nodes', nodes, '--redis', 'redis://127.0.0.1:1', '--namespace', namespace]);
    expect(both.status).toBe(1);
    expect(both.stderr).toMatch(/give one of url, sentinels and clusterNodes/);
  });

  /**
   * Two endpoints and a third registered node with names, a watcher, puts by node id every 20 ms
   * and resolves every 50 ms, through `disturb` (which returns once the cluster is whole again);
   * then every node and name is found, names bind, and nothing was lost, failed, left or hung.
   */
  async function survives(namespace: string, disturb: (slot: number) => Promise<void>): Promise<void> {
    const [da, db, dc, watcher] = await Promise.all([0, 1, 2, 3].map(() => connect(namespace)));
    const lost: RegistrationLostInfo[] = [];
    for (const d of [da, db, dc]) d.on('lost', (info: RegistrationLostInfo) => lost.push(info));
    const a = await Endpoint.create({ nodeId: `a-${namespace}`, directory: da });
    const b = await Endpoint.create({ nodeId: `b-${namespace}`, directory: db });
    cleanup.push(() => a.close(), () => b.close());
    const record = nodeRecord(`c-${namespace}`);
    await dc.register(record);
    await dc.bindName(`c-name-${namespace}`, 0x10n);
    await db.bindName(`b-name-${namespace}`, VADDR);

    const events: DirectoryEvent[] = [];
    const watching = new AbortController();
    void (async () => {
      for await (const e of watcher.watch({ signal: watching.signal })) events.push(e);
    })().catch(() => undefined);
    cleanup.push(async () => watching.abort());

    const mailbox = b.openMailbox(VADDR, { epoch: 'ops', threshold: 1n, maxBuffers: 64 });
    for (let i = 0; i < 64; i++) mailbox.post(8);
    mailbox.listen((c) => mailbox.post(c.buffer));
    let putsDone = 0;
    const putErrors: unknown[] = [];
    let going = true;
    const puts = (async () => {
      while (going) {
        await a.put(b.nodeId, VADDR, Buffer.alloc(8, putsDone & 0xff), { timeout: 10_000 }).then(
          () => putsDone++,
          (e: unknown) => putErrors.push(e),
        );
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const outcomes = new Map<string, number>();
    const resolves = (async () => {
      while (going) {
        const outcome = await Promise.race([
          dc.resolveNode(a.nodeId).then(
            (r) => (r?.nodeId === a.nodeId ? 'record' : 'missing'),
            (e: unknown) => codeOf(Promise.reject(e)),
          ),
          new Promise<string>((r) => setTimeout(() => r('hung'), 20_000)),
        ]);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await pollFor('a few puts first', () => putsDone >= 5, 10_000);

    await disturb(await set.slotOf(`rvma:{${namespace}}:members`));
    const fresh = await connect(namespace);
    for (const id of [a.nodeId, b.nodeId, record.nodeId]) await pollFor(`node ${id} after`, () => fresh.resolveNode(id), FAILOVER_WITHIN_MS);
    expect(await pollFor('b name', () => fresh.resolveName(`b-name-${namespace}`), FAILOVER_WITHIN_MS)).toMatchObject({ nodeId: b.nodeId, vaddr: VADDR });
    expect(await pollFor('c name', () => fresh.resolveName(`c-name-${namespace}`), FAILOVER_WITHIN_MS)).toMatchObject({ nodeId: record.nodeId, vaddr: 0x10n });
    await da.bindName(`a-late-${namespace}`, 0x20n);
    expect((await fresh.resolveName(`a-late-${namespace}`))?.nodeId).toBe(a.nodeId);
    // A node that joins now is seen by the watcher.
    await fresh.register(nodeRecord(`d-${namespace}`));
    await pollFor('the watcher sees a join after', () => events.some((e) => e.type === 'join' && e.node.nodeId === `d-${namespace}`), FAILOVER_WITHIN_MS);
    const before = putsDone;
    await pollFor('puts after', () => putsDone >= before + 5, 10_000);
    going = false;
    await Promise.all([puts, resolves]);

    expect(putErrors).toEqual([]);
    expect(lost).toEqual([]);
    expect(events.filter((e) => e.type === 'leave')).toEqual([]);
    expect(outcomes.get('hung') ?? 0).toBe(0);
    expect(outcomes.get('missing') ?? 0).toBe(0);
    for (const key of outcomes.keys()) expect(['record', 'ERR_RVMA_DIRECTORY_UNAVAILABLE']).toContain(key);
    expect(outcomes.get('record')).toBeGreaterThan(0);
  }

  test('the primary of the namespace killed (-9): its replica is promoted, and nothing registered is lost', async () => {
    await survives(`failover-${run}`, async (slot) => {
      await set.replicated(slot, FAILOVER_WITHIN_MS);
      const old = await set.killPrimaryOf(slot);
      const now = await set.failedOver(slot, old, FAILOVER_WITHIN_MS);
      expect(now).not.toBe(old);
    });
  });

  test("resharding: the namespace's slot moves to another primary while nodes register and resolve", async () => {
    const namespace = `reshard-${run}`;
    const d = await connect(namespace);
    // Registrations and name binds go on during the move, and all of them hold after it.
    let registering = true;
    const registered: string[] = [];
    const registrations = (async () => {
      for (let i = 0; registering; i++) {
        const id = `r${i}-${namespace}`;
        const other = await connect(namespace);
        await other.register(nodeRecord(id));
        await other.bindName(`${id}-name`, BigInt(i));
        registered.push(id);
      }
    })();
    await survives(namespace, async (slot) => {
      const from = await set.primaryOf(slot);
      const to = await set.moveSlotsOf(slot);
      expect(await set.primaryOf(slot)).toBe(to);
      expect(to).not.toBe(from);
    });
    registering = false;
    await registrations;
    expect(registered.length).toBeGreaterThan(0);
    for (const id of registered) {
      expect((await d.resolveNode(id))?.nodeId).toBe(id);
      expect((await d.resolveName(`${id}-name`))?.nodeId).toBe(id);
    }
  });
});
