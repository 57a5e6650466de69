// RedisDirectory across processes: children register and bind, the parent sees them; a child
// killed with -9 disappears within its lease; and an Endpoint reaches children by node id,
// task label and name over TCP, including a child restarted under the same node id.
import { type ChildProcess, fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { Endpoint } from '../../src';
import { type NodeRecord } from '../../src/directory';
import { nodeRecord } from '../helpers/directory';
import { describeRedis, pollFor, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';
import { redisSuite, uniqueId } from '../helpers/redis-suite';

const TTL_MS = 600;
const WATCH_INTERVAL_MS = 150;
// A lapsed lease is noticed by the next reconcile: TTL + interval, with generous slack for CI.
const LEAVE_WITHIN_MS = 10_000;
const READY_WITHIN_MS = 15_000;
// Child start-up (node + native addon) can take seconds on a loaded machine: multi-process
// tests get a larger bound than the default.
const FIXTURES = path.join(__dirname, '..', 'fixtures');
const VADDR = 0x10000n;

interface ChildMessage {
  type: string;
  [key: string]: unknown;
}

/** A forked fixture speaking JSON messages over IPC; every wait on it is bounded. */
class Child {
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
  private readonly inbox: ChildMessage[] = [];
  private readonly waiters: { match: (m: ChildMessage) => boolean; resolve: (m: ChildMessage) => void }[] = [];
  private stderr = '';
  private exitText: string | undefined;

  constructor(
    readonly label: string,
    script: string,
    config: unknown,
  ) {
    // execArgv []: the child runs the compiled CommonJS, without ts-jest's flags.
    this.proc = fork(path.join(FIXTURES, script), [JSON.stringify(config)], { execArgv: [], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.proc.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    this.proc.on('error', () => {});
    this.proc.on('message', (m: ChildMessage) => {
      const i = this.waiters.findIndex((w) => w.match(m));
      if (i >= 0) this.waiters.splice(i, 1)[0].resolve(m);
      else this.inbox.push(m);
    });
    this.exited = new Promise((resolve) =>
      this.proc.on('exit', (code, signal) => {
        this.exitText = `exited (code ${code}, signal ${signal})`;
        resolve();
      }),
    );
  }

  /** The next message of this type (a 'fatal' report fails the wait at once). */
  async next(type: string, timeoutMs: number): Promise<ChildMessage> {
    const match = (m: ChildMessage) => m.type === type || m.type === 'fatal';
    const i = this.inbox.findIndex(match);
    let message: ChildMessage | undefined = i >= 0 ? this.inbox.splice(i, 1)[0] : undefined;
    if (!message) {
      let timer: NodeJS.Timeout | undefined;
      let waiter: (typeof this.waiters)[number] | undefined;
      const received = new Promise<ChildMessage>((resolve) => this.waiters.push((waiter = { match, resolve })));
      const failed = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`child ${this.label}: no '${type}' within ${timeoutMs} ms${this.explain()}`)), timeoutMs);
        void this.exited.then(() => reject(new Error(`child ${this.label} ${this.exitText} before '${type}'${this.explain()}`)));
      });
      try {
        message = await Promise.race([received, failed]);
      } finally {
        clearTimeout(timer);
        const w = this.waiters.indexOf(waiter!);
        if (w >= 0) this.waiters.splice(w, 1);
      }
    }
    if (message.type === 'fatal') throw new Error(`child ${this.label} failed: ${String(message.message)}${this.explain()}`);
    return message;
  }

  async kill9(): Promise<void> {
    if (!this.exitText) this.proc.kill('SIGKILL');
    await this.exited;
  }

  private explain(): string {
    return this.stderr ? `\nstderr: ${this.stderr}` : '';
  }
}

describeRedis('RedisDirectory across processes', () => {
  const children: Child[] = [];
  const suite = redisSuite('procs', { ttlMs: TTL_MS, watchIntervalMs: WATCH_INTERVAL_MS }, async () => {
    await Promise.all(children.splice(0).map((c) => c.kill9()));
  });
  const { cleanup, connect, watchFrom } = suite;

  const spawn = (label: string, script: string, config: unknown) => {
    const child = new Child(label, script, config);
    children.push(child);
    return child;
  };

  const nodeConfig = (nodeId: string, labels: string[], names: Record<string, string>, ttlMs = TTL_MS) => ({
    url: suite.server.url,
    connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS,
    cluster: suite.cluster,
    ttlMs,
    record: {
      nodeId,
      incarnation: randomBytes(8).toString('hex'),
      addresses: { tcp: 'tcp://127.0.0.1:4100' },
      host: hostname(),
      capabilities: ['tcp'],
      labels,
      startTime: Date.now(),
    },
    names,
  });

  test('the parent sees registered children via list() and watch(); a child killed -9 leaves within its lease', async () => {
    const parent = await connect();
    const reader = await watchFrom(parent);
    const [idA, idB] = [uniqueId('child-a'), uniqueId('child-b')];
    const [nameA, nameB] = [uniqueId('inbox-a'), uniqueId('inbox-b')];
    const a = spawn('a', 'directory-node.js', nodeConfig(idA, ['/job:worker/replica:0/task:0'], { [nameA]: '65536' }));
    // b must outlive the test: a longer lease, so that a stalled CI machine cannot lapse it.
    const b = spawn('b', 'directory-node.js', nodeConfig(idB, ['/job:worker/replica:0/task:1'], { [nameB]: '65537' }, 5000));
    const recordA = (await a.next('ready', READY_WITHIN_MS)).record as NodeRecord;
    const recordB = (await b.next('ready', READY_WITHIN_MS)).record as NodeRecord;
    expect(recordA.pid).toBe(a.proc.pid);

    expect((await reader.event('join', idA, recordA.incarnation, LEAVE_WITHIN_MS)).node).toEqual(recordA);
    expect((await reader.event('join', idB, recordB.incarnation, LEAVE_WITHIN_MS)).node).toEqual(recordB);
    const listed = (await parent.list()).sort((x, y) => x.nodeId.localeCompare(y.nodeId));
    expect(listed).toEqual([recordA, recordB].sort((x, y) => x.nodeId.localeCompare(y.nodeId)));
    expect(await parent.resolveLabel('/job:worker/replica:0/task:1')).toEqual(recordB);
    expect(await parent.resolveName(nameA)).toEqual({ name: nameA, nodeId: idA, incarnation: recordA.incarnation, vaddr: 65536n });

    const killedAt = Date.now();
    await a.kill9();
    const leave = await reader.event('leave', idA, recordA.incarnation, LEAVE_WITHIN_MS);
    const leftAfterMs = Date.now() - killedAt;
    expect(leave.node).toEqual(recordA);
    // Not before the lease could have lapsed (no false leave while it was alive)...
    expect(leftAfterMs).toBeGreaterThanOrEqual(TTL_MS - 300);
    expect(await parent.resolveName(nameA)).toBeUndefined();
    expect(await parent.resolveNode(idA)).toBeUndefined();
    expect(await parent.resolveLabel('/job:worker/replica:0/task:0')).toBeUndefined();
    // ...and the survivor, whose heartbeat renews its lease, is untouched.
    expect((await parent.list()).map((n) => n.nodeId)).toEqual([idB]);
    expect((await parent.resolveName(nameB))?.nodeId).toBe(idB);
    expect(reader.seen.filter((s) => s.endsWith(`:${idB}`))).toEqual([`join:${idB}`]);
  }, 60_000);

  describe('Endpoint over TCP with a RedisDirectory', () => {
    const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

    /** Puts and reports 'placed' or the error code, instead of throwing. */
    async function outcome(put: Promise<void>): Promise<string> {
      try {
        await put;
        return 'placed';
      } catch (error) {
        return (error as { code?: string }).code ?? String(error);
      }
    }

    /** Resolves when the child reports this exact payload (length and sha256). */
    async function expectReceived(child: Child, payload: Uint8Array): Promise<void> {
      const got = await child.next('received', 10_000);
      expect({ bytes: got.bytes, sha256: got.sha256 }).toEqual({ bytes: payload.byteLength, sha256: sha256(payload) });
    }

    test('puts by node id, task label, tcp address and name reach a child; after its restart, only the new incarnation is reached', async () => {
      const parentDirectory = await connect();
      const parent = await Endpoint.create({ nodeId: uniqueId('parent'), directory: parentDirectory });
      cleanup.push(() => parent.close());
      const reader = await watchFrom(parentDirectory);

      const nodeId = uniqueId('worker');
      const label = '/job:worker/replica:0/task:1'; // unique: each test has its own cluster
      const name = uniqueId('inbox');
      const config = {
        url: suite.server.url,
        connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS,
        cluster: suite.cluster,
        ttlMs: TTL_MS,
        nodeId,
        labels: [label],
        vaddr: VADDR.toString(),
        name,
        bufferBytes: 1 << 16,
        registerWithinMs: 10_000,
      };
      const first = spawn('worker-1', 'directory-endpoint.js', config);
      const ready1 = await first.next('ready', READY_WITHIN_MS);
      expect(ready1.nodeId).toBe(nodeId);
      expect(String(ready1.address)).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);

      const payload = (n: number) => randomBytes(n);
      const p1 = payload(1000);
      await parent.put(nodeId, VADDR, p1, { timeout: 10_000 });
      await expectReceived(first, p1);
      const p2 = payload(4096 + 17);
      await parent.put(label, VADDR, p2, { timeout: 10_000 });
      await expectReceived(first, p2);
      const p3 = payload(65536);
      await parent.putNamed(name, p3, { timeout: 10_000 });
      await expectReceived(first, p3);
      const p4 = payload(3);
      await parent.put(String(ready1.address), VADDR, p4, { timeout: 10_000 });
      await expectReceived(first, p4);

      // The node restarts: same node id, new process, new incarnation, new port.
      await first.kill9();
      await reader.event('leave', nodeId, String(ready1.incarnation), LEAVE_WITHIN_MS);
      const second = spawn('worker-2', 'directory-endpoint.js', config);
      const ready2 = await second.next('ready', READY_WITHIN_MS);
      expect(ready2.incarnation).not.toBe(ready1.incarnation);
      expect(await parentDirectory.resolveNode(nodeId)).toMatchObject({ incarnation: ready2.incarnation, addresses: { tcp: ready2.address } });

      // The parent's cache still routes the node id to the old incarnation: that put must
      // fail as PEER_LOST (never land in the new process), and the next one resolves afresh.
      const stale = await outcome(parent.put(nodeId, VADDR, payload(8), { timeout: 5000 }));
      const p5 = payload(777);
      const fresh = await outcome(parent.put(nodeId, VADDR, p5, { timeout: 5000 }));
      // A name is resolved on every put: it reaches the new process at once.
      const p6 = payload(1234);
      const named = await outcome(parent.putNamed(name, p6, { timeout: 5000 }));
      expect({ stale, fresh, named }).toEqual({ stale: 'ERR_RVMA_PEER_LOST', fresh: 'placed', named: 'placed' });
      await expectReceived(second, p5);
      await expectReceived(second, p6);
    }, 60_000);

    test('a put by task label also re-resolves after the labelled node restarts', async () => {
      const parentDirectory = await connect();
      const parent = await Endpoint.create({ nodeId: uniqueId('parent'), directory: parentDirectory });
      cleanup.push(() => parent.close());
      const reader = await watchFrom(parentDirectory);
      const nodeId = uniqueId('worker');
      const label = '/job:worker/replica:0/task:2';
      const config = {
        url: suite.server.url,
        connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS,
        cluster: suite.cluster,
        ttlMs: TTL_MS,
        nodeId,
        labels: [label],
        vaddr: VADDR.toString(),
        name: uniqueId('inbox'),
        bufferBytes: 4096,
        registerWithinMs: 10_000,
      };
      const first = spawn('worker-1', 'directory-endpoint.js', config);
      const ready1 = await first.next('ready', READY_WITHIN_MS);
      const p1 = randomBytes(100);
      await parent.put(label, VADDR, p1, { timeout: 10_000 });
      await expectReceived(first, p1);

      await first.kill9();
      await reader.event('leave', nodeId, String(ready1.incarnation), LEAVE_WITHIN_MS);
      const second = spawn('worker-2', 'directory-endpoint.js', config);
      await second.next('ready', READY_WITHIN_MS);

      const stale = await outcome(parent.put(label, VADDR, randomBytes(8), { timeout: 5000 }));
      const p2 = randomBytes(200);
      const fresh = await outcome(parent.put(label, VADDR, p2, { timeout: 5000 }));
      expect({ stale, fresh }).toEqual({ stale: 'ERR_RVMA_PEER_LOST', fresh: 'placed' });
      await expectReceived(second, p2);
    }, 60_000);

    test('a node frozen past its lease whose node id another incarnation then took: on resuming, its directory reports lost and its endpoint registrationLost', async () => {
      const observer = await connect();
      const nodeId = uniqueId('frozen');
      const name = uniqueId('inbox');
      const config = {
        url: suite.server.url,
        connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS,
        cluster: suite.cluster,
        ttlMs: TTL_MS,
        nodeId,
        labels: [],
        vaddr: VADDR.toString(),
        name,
        bufferBytes: 4096,
        registerWithinMs: 10_000,
      };
      const frozen = spawn('frozen', 'directory-endpoint.js', config);
      const ready = await frozen.next('ready', READY_WITHIN_MS);

      // Frozen, it cannot renew: its lease lapses, and another incarnation registers the node id.
      frozen.proc.kill('SIGSTOP');
      await pollFor('the frozen node\'s lease lapsed', async () => (await observer.resolveNode(nodeId)) === undefined, LEAVE_WITHIN_MS);
      const successor = await connect();
      const record = nodeRecord(nodeId);
      await successor.register(record);
      await successor.bindName(name, 0x20000n);
      frozen.proc.kill('SIGCONT');

      const expected = { nodeId, incarnation: ready.incarnation, takenBy: record.incarnation, reason: 'takenOver' };
      expect((await frozen.next('lost', 10_000)).info).toEqual(expected);
      const lost = await frozen.next('registrationLost', 10_000);
      expect({ info: lost.info, registered: lost.registered }).toEqual({ info: expected, registered: false });
      // The resumed node took nothing back: the successor keeps the node id and the name.
      expect(await observer.resolveNode(nodeId)).toEqual(record);
      expect(await observer.resolveName(name)).toEqual({ name, nodeId, incarnation: record.incarnation, vaddr: 0x20000n });
    }, 60_000);

    test('putNamed of a name nobody bound rejects with ERR_RVMA_NO_NAME', async () => {
      const parentDirectory = await connect();
      const parent = await Endpoint.create({ nodeId: uniqueId('parent'), directory: parentDirectory });
      cleanup.push(() => parent.close());
      await expect(parent.putNamed(uniqueId('nobody'), new Uint8Array(4), { timeout: 5000 })).rejects.toMatchObject({
        code: 'ERR_RVMA_NO_NAME',
      });
    });
  });
});
