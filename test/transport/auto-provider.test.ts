// provider 'auto' between two processes of one host that share a RedisDirectory: puts by node
// id travel over shm (both records carry an shm:// address and the same host identity), and
// over tcp when either end runs tcp only.
import { Endpoint, RedisDirectory } from '../../src';
import { sha256, seededBytes, startAgent, trackChildren } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { CMA } from '../helpers/transports';
import { type RedisServer, describeRedis, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';

const TTL_MS = 5000;

describeRedis('provider auto across processes sharing a RedisDirectory', () => {
  const children = trackChildren('each');
  const cleanup: (() => Promise<void>)[] = [];
  let server: RedisServer;
  let cluster: string;

  beforeAll(async () => {
    server = await startRedis();
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => {
    cluster = uniqueNodeId('auto');
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
  });

  const pulled = (yes: boolean): string => (yes ? 'cma' : 'copy');
  test.each<['auto' | 'tcp', 'auto' | 'tcp', string, string, string]>([
    ['auto', 'auto', 'shm', pulled(CMA.fromOthers), pulled(CMA.ofDescendants)],
    ['tcp', 'auto', 'tcp', '', ''],
    ['auto', 'tcp', 'tcp', '', ''],
  ])('test process %s, child %s: puts by node id both ways travel over %s', async (here, there, provider, detail, childDetail) => {
    const directory = await RedisDirectory.connect({ url: server.url, cluster, ttlMs: TTL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => directory.close());
    const local = await Endpoint.create({ nodeId: uniqueNodeId('local'), provider: here, listen: 'tcp://127.0.0.1:0', directory });
    cleanup.push(() => local.close());
    const agent = await startAgent(children, `child-${there}`, {
      provider: there,
      listen: 'tcp://127.0.0.1:0',
      redis: { url: server.url, cluster, ttlMs: TTL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS },
    });
    // What the test process finds in the directory is what routes the put.
    const record = await directory.resolveNode(agent.nodeId);
    expect(record?.addresses).toEqual(there === 'auto' ? { tcp: agent.address, shm: agent.addresses.shm } : { tcp: agent.address });
    expect(record?.hostId).toBeTruthy();

    // There by node id, and back by node id (the child resolves the test process in Redis).
    const v = VADDR.toString();
    const size = 1 << 20; // large enough to be pulled over shm
    await agent.child.request({ cmd: 'open', vaddr: v });
    await agent.child.request({ cmd: 'post', vaddr: v, size });
    const back = local.openMailbox(VADDR);
    back.post(size);
    const data = seededBytes(size, 1);
    const report = agent.child.request({ cmd: 'next', vaddr: v, echo: { target: local.nodeId, vaddr: v }, timeout: 20_000 }, 30_000);
    const [child] = await Promise.all([report, local.put(agent.nodeId, VADDR, data, { timeout: 20_000 })]);
    expect(child).toMatchObject({ bytes: size, sha256: sha256(data) });
    const done = await back.next({ timeout: 20_000 });
    expect({ bytes: done.bytes, sha256: sha256(done.buffer) }).toEqual({ bytes: size, sha256: sha256(data) });

    expect(local.peers()).toEqual([{ nodeId: agent.nodeId, provider, detail }]);
    expect((await agent.child.request({ cmd: 'peers' })).peers).toEqual([{ nodeId: local.nodeId, provider, detail: childDetail }]);
  }, 60_000);
});
