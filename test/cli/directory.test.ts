// `rvma directory ls|watch` against a private redis-server: what nodes registered (with their
// names) is what the command prints, and watch prints joins and leaves as they happen.
import { randomBytes } from 'node:crypto';
import { RedisDirectory } from '../../src/directory';
import { CliProcess, rvma } from '../helpers/cli';
import { nodeRecord } from '../helpers/directory';
import { type RedisServer, describeRedis, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';

jest.setTimeout(60_000);

describeRedis('rvma directory', () => {
  let redis: RedisServer;
  const open: RedisDirectory[] = [];
  const cluster = `cli-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((d) => d.close()));
  });

  async function node(nodeId: string, labels: string[], names: [string, bigint][] = []): Promise<RedisDirectory> {
    const directory = await RedisDirectory.connect({ url: redis.url, cluster, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    open.push(directory);
    await directory.register(nodeRecord(nodeId, { labels, addresses: { tcp: `tcp://127.0.0.1:${4100 + open.length}` } }));
    for (const [name, vaddr] of names) await directory.bindName(name, vaddr);
    return directory;
  }

  test('ls --json: every live node with its incarnation, addresses, labels and bound names', async () => {
    await node('worker-a', ['/job:worker/task:0'], [['grads', 0x20000n], ['acts', 0x30000n]]);
    await node('worker-b', []);
    const other = await RedisDirectory.connect({ url: redis.url, cluster: `${cluster}-other`, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
    open.push(other);
    await other.register(nodeRecord('elsewhere'));

    const result = await rvma(['directory', 'ls', '--redis', redis.url, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--namespace', cluster, '--json']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const nodes = JSON.parse(result.stdout);
    expect(nodes.map((n: { nodeId: string }) => n.nodeId)).toEqual(['worker-a', 'worker-b']);
    expect(nodes[0]).toMatchObject({
      labels: ['/job:worker/task:0'],
      addresses: { tcp: 'tcp://127.0.0.1:4101' },
      names: [
        { name: 'acts', vaddr: '0x30000' },
        { name: 'grads', vaddr: '0x20000' },
      ],
    });
    expect(nodes[0].incarnation).toMatch(/^[0-9a-f]{16}$/);
    expect(nodes[1].names).toEqual([]);
  });

  test('ls prints a table, and says so when no node is live', async () => {
    await node('worker-a', ['/job:ps/task:0'], [['grads', 0x20000n]]);
    const table = await rvma(['directory', 'ls', '--redis', redis.url, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--cluster', cluster]);
    expect(table.status).toBe(0);
    const [head, row, ...rest] = table.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^node +incarnation +addresses +host:pid +up +labels +names$/);
    expect(row).toMatch(/^worker-a +[0-9a-f]{16} +tcp:\/\/127\.0\.0\.1:4101 +\S+:\d+ +\d+ s +\/job:ps\/task:0 +grads@0x20000$/);
    expect(rest).toEqual([]);
    const empty = await rvma(['directory', 'ls', '--redis', redis.url, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--cluster', `${cluster}-empty`]);
    expect(empty.stdout).toBe('no live nodes\n');
  });

  test('watch --json: the live nodes, then a join and a leave as they happen; Ctrl-C ends it with status 0', async () => {
    await node('early', []);
    const watch = new CliProcess(['directory', 'watch', '--redis', redis.url, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--cluster', cluster, '--json']);
    try {
      const live = JSON.parse(await watch.line('the live node', (l) => l.includes('"early"'), 15_000));
      expect(live).toMatchObject({ type: 'live', node: { nodeId: 'early' } });
      // The watch is subscribed before it lists; a node registered after the list is a join.
      const late = await node('late', ['x']);
      const join = JSON.parse(await watch.line('the join', (l) => l.includes('"late"'), 15_000));
      expect(join).toMatchObject({ type: 'join', node: { nodeId: 'late', labels: ['x'] } });
      await late.deregister();
      const leave = JSON.parse(await watch.line('the leave', (l) => l.includes('"leave"'), 15_000));
      expect(leave).toMatchObject({ type: 'leave', node: { nodeId: 'late' } });
      expect(await watch.stop('SIGINT')).toBe(0);
      expect(watch.stderr).toBe('');
    } finally {
      await watch.stop('SIGKILL');
    }
  });
});
