// RedisDirectory against Redis that wants credentials: a password (requirepass), an ACL user
// confined to its cluster's keys and channels, and TLS with a CA made for the test. Refusals are
// ERR_RVMA_AUTH, no message or record carries the password, and watch works as well.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { RedisDirectory, type RedisDirectoryOptions } from '../../src/directory';
import { hasOpenssl, makeCertificates } from '../helpers/certificates';
import { rvma } from '../helpers/cli';
import { codeOf, nodeRecord } from '../helpers/directory';
import { type RedisServer, WatchReader, describeRedis, freePort, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';

jest.setTimeout(60_000);

const PASSWORD = 'default-pw-7f3a';
const ALICE_PASSWORD = 'alice-pw-91c2';
// Alice may touch only the keys and channels of cluster "team", and no dangerous command.
const ALICE = ['--user', 'alice', 'on', `>${ALICE_PASSWORD}`, '~rvma:team:*', '&rvma:team:*', '+@all', '-@dangerous'];

describeRedis('RedisDirectory with Redis authentication and TLS', () => {
  let server: RedisServer;
  let tlsPort: number;
  let certs: { ca: string; cert: string; key: string } | undefined;
  let work: string;
  const open: RedisDirectory[] = [];
  const readers: WatchReader[] = [];
  const connect = async (options: RedisDirectoryOptions): Promise<RedisDirectory> => {
    const directory = await RedisDirectory.connect({ connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS, ...options });
    open.push(directory);
    return directory;
  };
  const plain = (auth = ''): string => `redis://${auth}127.0.0.1:${server.port}`;

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-redis-auth-'));
    // Where openssl is missing the TLS cases say so and fail under CI (a missing dependency must not pass).
    certs = hasOpenssl() ? makeCertificates(work) : undefined;
    tlsPort = await freePort();
    const tls = certs
      ? ['--tls-port', String(tlsPort), '--tls-cert-file', certs.cert, '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no']
      : [];
    server = await startRedis(['--requirepass', PASSWORD, ...ALICE, ...tls]);
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const reader of readers.splice(0)) reader.close();
    await Promise.all(open.splice(0).map((d) => d.close()));
  });

  test('the password from the URL or the options: the directory works, and shows the URL masked', async () => {
    const fromUrl = await connect({ url: plain(`:${PASSWORD}@`), cluster: 'pw' });
    expect(fromUrl.url).toBe(`redis://:***@127.0.0.1:${server.port}`);
    const node = nodeRecord('pw-node');
    await fromUrl.register(node);
    await fromUrl.bindName('inbox', 0x10000n);
    const fromOptions = await connect({ url: plain(), password: PASSWORD, cluster: 'pw' });
    expect(await fromOptions.resolveNode('pw-node')).toEqual(node);
    expect(await fromOptions.resolveName('inbox')).toMatchObject({ nodeId: 'pw-node', vaddr: 0x10000n });
  });

  test('no password, or a wrong one: ERR_RVMA_AUTH at connect, and the message never shows the password', async () => {
    const missing = RedisDirectory.connect({ url: plain(), connectTimeoutMs: 3000 });
    await expect(missing).rejects.toMatchObject({ code: 'ERR_RVMA_AUTH', message: expect.stringMatching(/Redis refused this client: NOAUTH/) });
    const wrong = 'not-the-password';
    const error = await RedisDirectory.connect({ url: plain(`:${wrong}@`), connectTimeoutMs: 3000 }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'ERR_RVMA_AUTH', message: expect.stringMatching(/WRONGPASS/) });
    expect((error as Error).message).toContain(`redis://:***@127.0.0.1:${server.port}`);
    expect((error as Error).message).not.toContain(wrong);
    await expect(RedisDirectory.connect({ url: plain(), password: 42 as unknown as string })).rejects.toMatchObject({
      code: 'ERR_RVMA_INVALID_ARGUMENT',
      message: 'RedisDirectory.connect: password must be a string, got number',
    });
  });

  test('records and names in Redis carry no secret', async () => {
    const directory = await connect({ url: plain(), password: PASSWORD, cluster: 'secrets' });
    await directory.register(nodeRecord('secret-node'));
    await directory.bindName('secret-name', 0x20000n);
    const raw = new Redis({ port: server.port, password: PASSWORD, lazyConnect: true });
    try {
      await raw.connect();
      const keys = await raw.keys('rvma:secrets:*');
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) {
        const type = await raw.type(key);
        const value = type === 'string' ? await raw.get(key) : JSON.stringify(await raw.smembers(key));
        expect(value).not.toContain(PASSWORD);
      }
    } finally {
      raw.disconnect();
    }
  });

  test('an ACL user works in its own cluster, is refused (ERR_RVMA_AUTH, NOPERM) in another, and watches', async () => {
    // The user docs/directory.md describes may not run INFO: connecting warns about nothing.
    const warn = jest.spyOn(console, 'warn');
    const alice = await connect({ url: plain(), username: 'alice', password: ALICE_PASSWORD, cluster: 'team' });
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
    const reader = new WatchReader(alice);
    readers.push(reader);
    await alice.list(); // behind the watch's first snapshot
    const peer = await connect({ url: plain(`alice:${ALICE_PASSWORD}@`), cluster: 'team' });
    const node = nodeRecord('team-node');
    await peer.register(node);
    expect((await reader.event('join', 'team-node', node.incarnation, 10_000)).node).toEqual(node);

    const outside = await connect({ url: plain(), username: 'alice', password: ALICE_PASSWORD, cluster: 'other' });
    const refused = await outside.register(nodeRecord('outsider')).catch((e: Error) => e);
    expect(refused).toMatchObject({ code: 'ERR_RVMA_AUTH', message: expect.stringMatching(/^RedisDirectory.register: Redis refused this client: NOPERM/) });
    expect(await codeOf(RedisDirectory.connect({ url: plain(), username: 'alice', password: 'wrong', connectTimeoutMs: 3000 }))).toBe('ERR_RVMA_AUTH');
  });

  const tlsTest = (name: string, body: () => Promise<void>): void =>
    test(name, async () => {
      if (!certs) {
        if (process.env.CI) throw new Error('openssl is needed to make the test certificates (apt-get install -y openssl)');
        console.warn(`skipping "${name}": openssl is not installed`);
        return;
      }
      await body();
    });
  const tlsUrl = (): string => `rediss://:${PASSWORD}@127.0.0.1:${tlsPort}`;

  tlsTest('TLS with the CA file: the directory works over rediss://', async () => {
    const directory = await connect({ url: tlsUrl(), tls: { caFile: certs!.ca }, cluster: 'tls' });
    const node = nodeRecord('tls-node');
    await directory.register(node);
    expect(await directory.list()).toEqual([node]);
  });

  tlsTest('TLS without the CA: the server is not trusted, ERR_RVMA_AUTH; a CA file that cannot be read is refused', async () => {
    const untrusted = await RedisDirectory.connect({ url: tlsUrl(), connectTimeoutMs: 3000 }).catch((e: Error) => e);
    expect(untrusted).toMatchObject({ code: 'ERR_RVMA_AUTH', message: expect.stringMatching(/self-signed certificate|unable to verify/) });
    await expect(RedisDirectory.connect({ url: tlsUrl(), tls: { caFile: path.join(work, 'missing.crt') } })).rejects.toMatchObject({
      code: 'ERR_RVMA_INVALID_ARGUMENT',
      message: expect.stringMatching(/^RedisDirectory.connect: tls.caFile .*missing.crt cannot be read/),
    });
  });

  tlsTest('rvma directory ls over TLS with --tls-ca, credentials in the URL', async () => {
    const directory = await connect({ url: tlsUrl(), tls: { caFile: certs!.ca }, cluster: 'cli' });
    await directory.register(nodeRecord('cli-node'));
    const result = await rvma(['directory', 'ls', '--redis', tlsUrl(), '--tls-ca', certs!.ca, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--cluster', 'cli', '--json']);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout).map((n: { nodeId: string }) => n.nodeId)).toEqual(['cli-node']);
    const refused = await rvma(['directory', 'ls', '--redis', plain(':wrong@'), '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--cluster', 'cli']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^rvma directory ls: ERR_RVMA_AUTH: RedisDirectory.connect: Redis at redis:\/\/:\*\*\*@127.0.0.1:\d+: Redis refused this client: WRONGPASS/);
  });
});
