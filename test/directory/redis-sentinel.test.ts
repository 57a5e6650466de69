// RedisDirectory on a replicated Redis through Sentinel (support/redis-sentinel.ts: a
// primary, a replica, three sentinels): nodes register and bind names through the sentinels,
// and when the primary is killed with -9 the sentinels promote the replica. Every node stays
// registered with its names, no node is reported lost, puts by cached routes go on, a watcher
// sees no node leave, and every resolve during the failover answers or fails typed. The same
// set on TLS alone works too, and a client that lacks the CA is refused with ERR_RVMA_AUTH.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RedisDirectory } from '../../src';
import { hasOpenssl, makeCertificates } from '../helpers/certificates';
import { codeOf, nodeRecord } from '../helpers/directory';
import { survives } from '../helpers/directory-failover';
import { TEST_CONNECT_TIMEOUT_MS, describeRedis, pollFor } from '../helpers/redis';
import { type SentinelSet, startSentinels } from '../../support/redis-sentinel';

jest.setTimeout(90_000);
const run = randomBytes(3).toString('hex');
/** A bound on a hang: a failover here takes the sentinels' 3 s down-after and an election. */
const FAILOVER_WITHIN_MS = 30_000;

describeRedis('RedisDirectory through Sentinel', () => {
  let set: SentinelSet;
  const cleanup: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    set = await startSentinels();
  }, 60_000);
  afterAll(async () => {
    await set?.stop();
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  // A lease that outlasts the failover (about 6 s here: 3 s until the sentinels call the primary
  // down, then the election) by more than a heartbeat: no node's key lapses meanwhile. With a
  // shorter one, keys lapse during the failover and their nodes register again at once after
  // it: watchers see them leave and join (docs/directory.md).
  const connect = async (cluster: string): Promise<RedisDirectory> => {
    const d = await RedisDirectory.connect({ sentinels: set.sentinels, name: set.name, cluster, ttlMs: 15_000, watchIntervalMs: 500, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    cleanup.push(() => d.close());
    return d;
  };

  test('the options: sentinels and name are checked, and url with sentinels is refused', async () => {
    const call = (o: object) => RedisDirectory.connect(o as never);
    expect(await codeOf(call({ sentinels: [], name: 'x' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ sentinels: [{ host: '127.0.0.1', port: 0 }], name: 'x' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ sentinels: set.sentinels }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    expect(await codeOf(call({ sentinels: set.sentinels, name: set.name, url: 'redis://127.0.0.1:1' }))).toBe('ERR_RVMA_INVALID_ARGUMENT');
    const d = await connect(`opts-${run}`);
    expect(d.url).toBe(`sentinel:${set.name}@${set.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`);
  });

  test('the primary killed (-9): the replica is promoted, and nothing registered is lost', async () => {
    const namespace = `failover-${run}`;
    await survives({ namespace, connect: () => connect(namespace), cleanup, withinMs: FAILOVER_WITHIN_MS }, async () => {
      await set.replicated(FAILOVER_WITHIN_MS);
      const old = await set.killPrimary();
      await set.failedOver(old, FAILOVER_WITHIN_MS);
    });
  });
});

describeRedis('RedisDirectory through Sentinel over TLS', () => {
  let set: SentinelSet | undefined;
  let work: string;
  let ca: string | undefined;
  const cleanup: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-sentinel-tls-'));
    // Where openssl is missing the test says so, and fails under CI.
    if (!hasOpenssl()) return;
    const certs = makeCertificates(work);
    ca = certs.ca;
    set = await startSentinels({ tls: certs });
  }, 60_000);
  afterAll(async () => {
    await set?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  test('primary, replica and sentinels on TLS alone: the directory works, follows a failover, and refuses a CA it was not given', async () => {
    if (!set) {
      if (process.env.CI) throw new Error('openssl is needed to make the test certificates (apt-get install -y openssl)');
      console.warn('skipping: openssl is not installed');
      return;
    }
    const namespace = `tls-${run}`;
    const connect = async (): Promise<RedisDirectory> => {
      const d = await RedisDirectory.connect({ sentinels: set!.sentinels, name: set!.name, tls: { caFile: ca! }, namespace, ttlMs: 15_000, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
      cleanup.push(() => d.close());
      return d;
    };
    const d = await connect();
    await d.register(nodeRecord(`tls-node-${run}`));
    await d.bindName(`tls-name-${run}`, 0x40n);
    const other = await connect();
    expect(await other.resolveName(`tls-name-${run}`)).toMatchObject({ nodeId: `tls-node-${run}`, vaddr: 0x40n });
    // Without the CA the sentinels' certificate is not trusted: ERR_RVMA_AUTH, not "unreachable".
    const untrusted = await RedisDirectory.connect({ sentinels: set.sentinels, name: set.name, tls: true, namespace, connectTimeoutMs: 3000 }).catch((e: Error) => e);
    expect(untrusted).toMatchObject({ code: 'ERR_RVMA_AUTH', message: expect.stringMatching(/certificate/) });

    await set.replicated(FAILOVER_WITHIN_MS);
    const old = await set.killPrimary();
    await set.failedOver(old, FAILOVER_WITHIN_MS);
    const fresh = await connect();
    expect(await pollFor('the name on the new primary', () => fresh.resolveName(`tls-name-${run}`), FAILOVER_WITHIN_MS)).toMatchObject({ nodeId: `tls-node-${run}` });
  });
});
