// RedisDirectory on a replicated Redis through Sentinel (test/helpers/redis-sentinel.ts: a
// primary, a replica, three sentinels): nodes register and bind names through the sentinels,
// and when the primary is killed with -9 the sentinels promote the replica. Every node stays
// registered with its names, no node is reported lost, puts by cached routes go on, a watcher
// sees no node leave, and every resolve during the failover answers or fails typed. The same
// set on TLS alone works too, and a client that lacks the CA is refused with ERR_RVMA_AUTH.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DirectoryEvent, Endpoint, RedisDirectory, RegistrationLostInfo } from '../../src';
import { hasOpenssl, makeCertificates } from '../helpers/certificates';
import { codeOf, nodeRecord } from '../helpers/directory';
import { TEST_CONNECT_TIMEOUT_MS, describeRedis, pollFor } from '../helpers/redis';
import { SentinelSet, startSentinels } from '../../examples/common/redis-sentinel';

jest.setTimeout(90_000);
const run = randomBytes(3).toString('hex');
const VADDR = 0x5e000n;
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
    const cluster = `failover-${run}`;
    const [da, db, dc, watcher] = await Promise.all([0, 1, 2, 3].map(() => connect(cluster)));
    const lost: RegistrationLostInfo[] = [];
    for (const d of [da, db, dc]) d.on('lost', (info: RegistrationLostInfo) => lost.push(info));
    const a = await Endpoint.create({ nodeId: `a-${run}`, directory: da });
    const b = await Endpoint.create({ nodeId: `b-${run}`, directory: db });
    cleanup.push(() => a.close(), () => b.close());
    const record = nodeRecord(`c-${run}`);
    await dc.register(record);
    await dc.bindName(`c-name-${run}`, 0x10n);
    await db.bindName(`b-name-${run}`, VADDR);

    const events: DirectoryEvent[] = [];
    const watching = new AbortController();
    void (async () => {
      for await (const e of watcher.watch({ signal: watching.signal })) events.push(e);
    })().catch(() => undefined);
    cleanup.push(async () => watching.abort());

    // Puts from a to b by node id, the route cached, all through the failover.
    const mailbox = b.openMailbox(VADDR, { epoch: 'ops', threshold: 1n, maxBuffers: 64 });
    for (let i = 0; i < 64; i++) mailbox.post(8);
    mailbox.listen((c) => mailbox.post(c.buffer));
    let putsDone = 0;
    const putErrors: unknown[] = [];
    let putting = true;
    const puts = (async () => {
      while (putting) {
        await a.put(b.nodeId, VADDR, Buffer.alloc(8, putsDone & 0xff), { timeout: 10_000 }).then(
          () => putsDone++,
          (e: unknown) => putErrors.push(e),
        );
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    // Resolves through the failover: each answers with the record or fails typed, none hangs.
    const outcomes = new Map<string, number>();
    let resolving = true;
    const resolves = (async () => {
      while (resolving) {
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
    await pollFor('a few puts before the kill', () => putsDone >= 5, 10_000);

    await set.replicated(FAILOVER_WITHIN_MS);
    const old = await set.killPrimary();
    await set.failedOver(old, FAILOVER_WITHIN_MS);
    // Every node and name is found through a new client on the promoted primary.
    const fresh = await connect(cluster);
    for (const id of [a.nodeId, b.nodeId, record.nodeId]) await pollFor(`node ${id} on the new primary`, () => fresh.resolveNode(id), FAILOVER_WITHIN_MS);
    expect(await pollFor('b name', () => fresh.resolveName(`b-name-${run}`), FAILOVER_WITHIN_MS)).toMatchObject({ nodeId: b.nodeId, vaddr: VADDR });
    expect(await pollFor('c name', () => fresh.resolveName(`c-name-${run}`), FAILOVER_WITHIN_MS)).toMatchObject({ nodeId: record.nodeId, vaddr: 0x10n });
    // The directories work on the new primary: a name bound now is seen.
    await da.bindName(`a-late-${run}`, 0x20n);
    expect((await fresh.resolveName(`a-late-${run}`))?.nodeId).toBe(a.nodeId);
    const before = putsDone;
    await pollFor('puts after the failover', () => putsDone >= before + 5, 10_000);
    putting = false;
    resolving = false;
    await Promise.all([puts, resolves]);

    expect(putErrors).toEqual([]);
    expect(lost).toEqual([]);
    expect(events.filter((e) => e.type === 'leave')).toEqual([]);
    expect(outcomes.get('hung') ?? 0).toBe(0);
    expect(outcomes.get('missing') ?? 0).toBe(0);
    for (const key of outcomes.keys()) expect(['record', 'ERR_RVMA_DIRECTORY_UNAVAILABLE']).toContain(key);
    expect(outcomes.get('record')).toBeGreaterThan(0);
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
