// RedisDirectory decides who owns a name from what Redis holds, in one atomic step, never from
// the caller's local view: that view goes stale whenever a lease lapses and another node binds.
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { RedisDirectory } from '../../src/directory';
import { type RedisServer, describeRedis, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';
import { codeOf, nodeRecord } from '../helpers/directory';

const TTL_MS = 5000; // long: nothing in this file may lapse

const run = randomBytes(3).toString('hex');
let counter = 0;
const uniqueId = (label: string) => `${label}-${run}-${++counter}`;



describeRedis('RedisDirectory name ownership', () => {
  let server: RedisServer;
  let cluster: string;
  const cleanup: (() => Promise<void>)[] = [];

  const connect = async () => {
    const directory = await RedisDirectory.connect({ url: server.url, cluster, ttlMs: TTL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => directory.close());
    return directory;
  };

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => {
    cluster = uniqueId('owner');
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  test('unbindName of a name this node bound earlier but another live node holds now is refused, and the name stays', async () => {
    const [a, b] = [await connect(), await connect()];
    const ra = nodeRecord(uniqueId('a'));
    const rb = nodeRecord(uniqueId('b'));
    await a.register(ra);
    await b.register(rb);
    const name = uniqueId('inbox');
    await a.bindName(name, 0x10000n);

    // What Redis holds after a's binding lapsed and b bound the name (docs/directory.md, key
    // layout); a still remembers binding it.
    const admin = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    cleanup.push(async () => admin.disconnect());
    await admin.connect();
    const binding = JSON.stringify({ nodeId: rb.nodeId, incarnation: rb.incarnation, vaddr: '131072' });
    await admin.set(`rvma:${cluster}:name:${name}`, binding, 'PX', TTL_MS);

    const error = await a.unbindName(name).then(
      () => undefined,
      (e: unknown) => e as { code?: string; message: string },
    );
    expect(error).toMatchObject({ code: 'ERR_RVMA_DIRECTORY_CONFLICT', message: expect.stringContaining(name) });
    expect(await a.resolveName(name)).toEqual({ name, nodeId: rb.nodeId, incarnation: rb.incarnation, vaddr: 0x20000n });
  });

  test('unbindName of a name whose binding already lapsed resolves, and this node can bind it again', async () => {
    const a = await connect();
    const ra = nodeRecord(uniqueId('a'));
    await a.register(ra);
    const name = uniqueId('inbox');
    await a.bindName(name, 0x10000n);
    const admin = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    cleanup.push(async () => admin.disconnect());
    await admin.connect();
    await admin.del(`rvma:${cluster}:name:${name}`);

    expect(await codeOf(a.unbindName(name))).toBe('resolved');
    await a.bindName(name, 0x30000n);
    expect((await a.resolveName(name))?.vaddr).toBe(0x30000n);
  });
});
