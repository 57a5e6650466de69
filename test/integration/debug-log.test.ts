// NODE_DEBUG=rvma: connects, handshakes, refusals and losses, one line each on stderr, written
// by the native transports and by the library alike; nothing without it. A child process on the
// compiled package (dist/, built by npm test before jest).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findRedisServer, startRedis } from '../helpers/redis';

const DIST = path.join(__dirname, '..', '..', 'dist', 'src', 'index.js');

// Two endpoints over tcp: a connect, a put, a put refused, then the receiver closes.
const SCRIPT = `
  const { Endpoint } = require(${JSON.stringify(DIST)});
  (async () => {
    const receiver = await Endpoint.create({ nodeId: 'debug-receiver', listen: 'tcp://127.0.0.1:0' });
    const sender = await Endpoint.create({ nodeId: 'debug-sender', listen: 'tcp://127.0.0.1:0' });
    const mailbox = receiver.openMailbox(0x10000n);
    mailbox.post(8);
    const peer = await sender.connect(receiver.address);
    await sender.put(peer, 0x10000n, Buffer.alloc(8));
    await sender.put(peer, 0x20000n, Buffer.alloc(8)).catch(() => undefined);
    const lost = new Promise((resolve) => sender.once('peerLost', resolve));
    await receiver.close();
    await lost;
    await sender.close();
  })().catch((e) => { console.error('FAILED', e); process.exitCode = 1; });`;

function run(env: NodeJS.ProcessEnv): { status: number | null; lines: string[] } {
  const result = spawnSync(process.execPath, ['-e', SCRIPT], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, lines: result.stderr.split('\n').filter((l) => l !== '') };
}

(fs.existsSync(DIST) ? describe : describe.skip)('NODE_DEBUG=rvma', () => {
  test('one line per connect, handshake, refusal and loss, from the transport and the library', () => {
    const { status, lines } = run({ NODE_DEBUG: 'net,RVMA' }); // a list, in any case, as util.debuglog reads it
    expect(status).toBe(0);
    const ours = lines.filter((l) => /^RVMA \d+: /.test(l)).map((l) => l.replace(/^RVMA \d+: /, ''));
    const expected = [
      /^tcp: connected to node "debug-receiver" \(incarnation \d+\) at tcp:\/\/127\.0\.0\.1:\d+$/,
      /^tcp: accepted node "debug-sender" \(incarnation \d+\)$/,
      /^endpoint "debug-sender": connect reached node "debug-receiver"$/,
      /^endpoint "debug-sender": ERR_RVMA_NO_MAILBOX: .*no mailbox is open at vaddr 0x20000 on node "debug-receiver"/,
      /^tcp: connection to "debug-receiver" ended: /,
    ];
    for (const line of expected) expect(ours).toContainEqual(expect.stringMatching(line));
  });

  (findRedisServer() ? test : test.skip)('the directory: connected, registered, the record put back after Redis lost it', async () => {
    const redis = await startRedis();
    try {
      const script = `
        const { Endpoint, RedisDirectory } = require(${JSON.stringify(DIST)});
        (async () => {
          const directory = await RedisDirectory.connect({ url: process.argv[1], namespace: 'debug', heartbeatMs: 50, ttlMs: 2000 });
          const endpoint = await Endpoint.create({ nodeId: 'debug-node', directory });
          const admin = await RedisDirectory.connect({ url: process.argv[1], namespace: 'debug' });
          await admin.deregister().catch(() => undefined);
          // What a Redis restarted empty looks like to the node: its record is gone.
          await admin['redis'].flushall();
          await new Promise((r) => setTimeout(r, 300));
          await admin.close();
          await endpoint.close();
          await directory.close();
        })().catch((e) => { console.error('FAILED', e); process.exitCode = 1; });`;
      const result = spawnSync(process.execPath, ['-e', script, redis.url], { env: { ...process.env, NODE_DEBUG: 'rvma' }, encoding: 'utf8', timeout: 60_000 });
      const ours = result.stderr.split('\n').filter((l) => /^RVMA \d+: directory: /.test(l)).map((l) => l.replace(/^RVMA \d+: /, ''));
      expect(result.status).toBe(0);
      expect(ours).toContainEqual(expect.stringMatching(/^directory: connected to Redis at redis:\/\/127\.0\.0\.1:\d+ \(namespace "debug"\)$/));
      expect(ours).toContainEqual(expect.stringMatching(/^directory: registered node "debug-node" \(incarnation \S+\), lease 2000 ms$/));
      expect(ours).toContainEqual('directory: the record of node "debug-node" is gone from Redis (restarted or failed over): registering it again');
    } finally {
      await redis.stop();
    }
  });

  test('nothing without it, or for another section', () => {
    expect(run({ NODE_DEBUG: '' })).toEqual({ status: 0, lines: [] });
    expect(run({ NODE_DEBUG: 'rvmax,http' }).lines.filter((l) => l.startsWith('RVMA'))).toEqual([]);
    expect(run({ NODE_DEBUG: 'rv*' }).lines.filter((l) => l.startsWith('RVMA')).length).toBeGreaterThan(0); // a pattern
  });
});
