// RedisDirectory decides who owns a name from what Redis holds, in one atomic step, never from
// the caller's local view: that view goes stale whenever a lease lapses and another node binds.
import Redis from 'ioredis';
import { describeRedis } from '../helpers/redis';
import { redisSuite, uniqueId } from '../helpers/redis-suite';
import { codeOf, nodeRecord } from '../helpers/directory';

const TTL_MS = 5000; // long: nothing in this file may lapse

describeRedis('RedisDirectory name ownership', () => {
  const suite = redisSuite('owner', { ttlMs: TTL_MS });
  const { cleanup, connect } = suite;

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
    const admin = new Redis(suite.server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    cleanup.push(async () => admin.disconnect());
    await admin.connect();
    const binding = JSON.stringify({ nodeId: rb.nodeId, incarnation: rb.incarnation, vaddr: '131072' });
    await admin.set(`rvma:${suite.cluster}:name:${name}`, binding, 'PX', TTL_MS);

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
    const admin = new Redis(suite.server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    cleanup.push(async () => admin.disconnect());
    await admin.connect();
    await admin.del(`rvma:${suite.cluster}:name:${name}`);

    expect(await codeOf(a.unbindName(name))).toBe('resolved');
    await a.bindName(name, 0x30000n);
    expect((await a.resolveName(name))?.vaddr).toBe(0x30000n);
  });
});
