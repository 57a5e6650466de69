// RedisDirectory watch() consistency when the watcher's link to Redis is slow. Events come
// from two paths (pub/sub, and periodic list() comparison for lapsed leases); a snapshot
// taken before an event but read after it must not undo that event.
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { RedisDirectory } from '../../src/directory';
import { type RedisServer, WatchReader, describeRedis, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';
import { nodeRecord } from '../helpers/directory';

const TTL_MS = 5000; // long: nothing in this file may lapse
const WATCH_INTERVAL_MS = 150;
// Longer than the watch interval: some comparison is always in flight when an event arrives.
const LINK_DELAY_MS = 200;

const run = randomBytes(3).toString('hex');
let counter = 0;
const uniqueId = (label: string) => `${label}-${run}-${++counter}`;


/**
 * A TCP proxy to Redis that delays every reply by `delayMs` on command connections, but
 * forwards at once on connections that subscribed: a watcher whose queries are slow while
 * pub/sub messages are quick (as with a busy server or a distant client).
 */
async function slowLinkProxy(redisUrl: string, delayMs: number): Promise<{ url: string; setDelay(ms: number): void; close(): Promise<void> }> {
  const target = new URL(redisUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: target.hostname, port: Number(target.port || 6379) });
    sockets.add(client).add(upstream);
    let subscriber = false;
    client.on('data', (chunk) => {
      if (/subscribe/i.test(chunk.toString('latin1'))) subscriber = true;
      upstream.write(chunk);
    });
    // Never before an earlier chunk: the replies of one connection stay in order when the delay changes.
    let releaseAt = 0;
    upstream.on('data', (chunk) => {
      if (subscriber) return client.write(chunk);
      releaseAt = Math.max(releaseAt, Date.now() + delayMs);
      setTimeout(() => client.writable && client.write(chunk), releaseAt - Date.now());
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  // Same URL (credentials, db) with the proxy as host.
  const url = new URL(redisUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    setDelay: (ms) => (delayMs = ms),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describeRedis('RedisDirectory watch() over a slow link', () => {
  let server: RedisServer;
  const cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  test('a node that registers and deregisters is reported exactly as join, leave (no phantom join or leave)', async () => {
    const cluster = uniqueId('slow');
    const proxy = await slowLinkProxy(server.url, LINK_DELAY_MS);
    cleanup.push(() => proxy.close());
    const watcher = await RedisDirectory.connect({ url: proxy.url, cluster, ttlMs: TTL_MS, watchIntervalMs: WATCH_INTERVAL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => watcher.close());
    const node = await RedisDirectory.connect({ url: server.url, cluster, ttlMs: TTL_MS, watchIntervalMs: WATCH_INTERVAL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => node.close());
    const reader = new WatchReader(watcher);
    cleanup.push(async () => reader.close());
    await watcher.list(); // the watch's first snapshot is taken

    const nodeId = uniqueId('flapping');
    // Absence of an event can only be checked by letting time pass: hold each state for a
    // few comparison rounds (each takes two slow round trips), bounded.
    const holdMs = 2 * (WATCH_INTERVAL_MS + 2 * LINK_DELAY_MS);
    const nothingMoreFor = (ms: number) =>
      reader.next(`no event of ${nodeId}`, (e) => e.node.nodeId === nodeId, ms).then(
        (e) => `${e.type}:${e.node.incarnation}`,
        () => undefined,
      );
    const expected: string[] = [];
    const unexpected: string[] = [];
    for (let i = 0; i < 2; i++) {
      const record = nodeRecord(nodeId);
      await node.register(record);
      await reader.event('join', nodeId, record.incarnation, 5000);
      expected.push(`join:${nodeId}`);
      const whileAlive = await nothingMoreFor(holdMs);
      if (whileAlive) unexpected.push(`round ${i}: ${whileAlive} while the node was registered`);
      await node.deregister();
      // (Not found if a phantom leave already consumed it; that is reported below.)
      await reader.event('leave', nodeId, record.incarnation, 1500).catch(() => undefined);
      expected.push(`leave:${nodeId}`);
      const whileGone = await nothingMoreFor(holdMs);
      if (whileGone) unexpected.push(`round ${i}: ${whileGone} after the node deregistered`);
    }
    expect({ unexpected, seen: reader.seen.filter((s) => s.endsWith(`:${nodeId}`)) }).toEqual({ unexpected: [], seen: expected });
  });

  test('a watch whose first member-list read fails reports the nodes already there as no joins', async () => {
    const cluster = uniqueId('seed');
    const nodes = await Promise.all([0, 1, 2].map(async () => {
      const d = await RedisDirectory.connect({ url: server.url, cluster, ttlMs: TTL_MS, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
      cleanup.push(() => d.close());
      await d.register(nodeRecord(uniqueId('there')));
      return d;
    }));
    const proxy = await slowLinkProxy(server.url, 0);
    cleanup.push(() => proxy.close());
    const watcher = await RedisDirectory.connect({ url: proxy.url, cluster, ttlMs: TTL_MS, watchIntervalMs: WATCH_INTERVAL_MS, commandTimeoutMs: 200, connectTimeoutMs: 5000 });
    cleanup.push(() => watcher.close());
    // Replies slower than the watcher's command timeout: its first comparison (the seed) fails.
    proxy.setDelay(400);
    const reader = new WatchReader(watcher);
    cleanup.push(async () => reader.close());
    await new Promise((r) => setTimeout(r, 300)); // the seed has timed out
    proxy.setDelay(0);
    // Several comparisons later, a node that registers now is the only join.
    await new Promise((r) => setTimeout(r, 4 * WATCH_INTERVAL_MS));
    const late = nodeRecord(uniqueId('late'));
    await nodes[0].register(late);
    await reader.event('join', late.nodeId, late.incarnation, 5000);
    expect(reader.seen).toEqual([`join:${late.nodeId}`]);
  });
});
