// RedisDirectory on a sharded Redis (support/redis-cluster.ts: 3 primaries, 3 replicas):
// a namespace's keys share one hash slot; nodes register, bind names and watch through the
// cluster; when the primary serving that slot is killed with -9 its replica is promoted, and
// when the slot moves to another primary (resharding) the directory follows. In both, every
// node stays registered with its names, no node is reported lost, puts by cached routes go on,
// a watcher sees no node leave, and every resolve answers or fails typed.
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { RedisDirectory } from '../../src';
import { rvma } from '../helpers/cli';
import { codeOf, nodeRecord } from '../helpers/directory';
import { type FailoverScenario, survives } from '../helpers/directory-failover';
import { TEST_CONNECT_TIMEOUT_MS, WatchReader, describeRedis } from '../helpers/redis';
import { type ClusterSet, startCluster } from '../../support/redis-cluster';

jest.setTimeout(120_000);
const run = randomBytes(3).toString('hex');
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
  const scenario = (namespace: string): FailoverScenario => ({ namespace, connect: () => connect(namespace), cleanup, withinMs: FAILOVER_WITHIN_MS });
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

  test('an ACL user confined to its namespace (hash-tagged patterns, CLUSTER SLOTS, CLUSTER INFO and INFO): works and watches there, refused (ERR_RVMA_AUTH) elsewhere', async () => {
    const namespace = `acl-${run}`;
    const password = `pw-${run}`;
    // Cluster nodes keep their users apart: each node gets the same user.
    for (const node of set.nodes) {
      const client = new Redis({ ...node, lazyConnect: true });
      await client.connect();
      await client.call('ACL', 'SETUSER', 'alice', 'reset', 'on', `>${password}`, `~rvma:{${namespace}}:*`, `&rvma:{${namespace}}:*`, '+@all', '-@dangerous', '+cluster|slots', '+cluster|info', '+info');
      client.disconnect();
    }
    const as = async (ns: string): Promise<RedisDirectory> => {
      const d = await RedisDirectory.connect({ clusterNodes: set.nodes, username: 'alice', password, namespace: ns, ttlMs: 15_000, watchIntervalMs: 500, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
      cleanup.push(() => d.close());
      return d;
    };
    // ioredis' cluster subscriber always runs a ready check (INFO): with INFO granted, nothing warns.
    const warn = jest.spyOn(console, 'warn');
    cleanup.push(async () => warn.mockRestore());
    const alice = await as(namespace);
    const reader = new WatchReader(alice);
    cleanup.push(async () => reader.close());
    await alice.list(); // behind the watch's first snapshot
    const node = nodeRecord(`acl-node-${run}`);
    const member = await as(namespace);
    await member.register(node);
    await member.bindName(`acl-name-${run}`, 0x40n);
    expect((await reader.event('join', node.nodeId, node.incarnation, 10_000)).node).toEqual(node);
    expect((await alice.resolveName(`acl-name-${run}`))?.nodeId).toBe(node.nodeId);
    expect(warn).not.toHaveBeenCalled();

    const outside = await as(`acl-other-${run}`);
    const refused = await outside.register(nodeRecord(`outsider-${run}`)).catch((e: Error) => e);
    expect(refused).toMatchObject({ code: 'ERR_RVMA_AUTH', message: expect.stringMatching(/^RedisDirectory.register: Redis refused this client: NOPERM/) });
    expect(await codeOf(RedisDirectory.connect({ clusterNodes: set.nodes, username: 'alice', password: 'wrong', connectTimeoutMs: 3000 }))).toBe('ERR_RVMA_AUTH');
  });

  test('the primary of the namespace killed (-9): its replica is promoted, and nothing registered is lost', async () => {
    const namespace = `failover-${run}`;
    await survives(scenario(namespace), async () => {
      const slot = await set.slotOf(`rvma:{${namespace}}:members`);
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
    await survives(scenario(namespace), async () => {
      const slot = await set.slotOf(`rvma:{${namespace}}:members`);
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
