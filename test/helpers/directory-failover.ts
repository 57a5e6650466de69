// The directory through a failover or a resharding: what every replicated or sharded Redis
// suite checks (test/directory/redis-sentinel.test.ts, redis-cluster.test.ts).
import { type DirectoryEvent, Endpoint, type RedisDirectory, type RegistrationLostInfo } from '../../src';
import { codeOf, nodeRecord } from './directory';
import { pollFor } from './redis';

const VADDR = 0x5e000n;

export interface FailoverScenario {
  namespace: string;
  /** A new directory on the deployment, closed by cleanup. */
  connect(): Promise<RedisDirectory>;
  /** Steps run after the test (in reverse). */
  cleanup: (() => Promise<unknown>)[];
  /** A bound on every wait for the deployment to serve again. */
  withinMs: number;
}

/**
 * Two endpoints and a third registered node with names, a watcher, puts by node id every 20 ms,
 * puts by name and resolves every 50 ms, through `disturb` (which returns once Redis serves
 * again); then every node and name is found, names bind, a new node's join is heard, and
 * nothing was lost, left or hung; puts by name landed or failed typed, none by node id failed.
 */
export async function survives(s: FailoverScenario, disturb: () => Promise<void>): Promise<void> {
  const { namespace, connect, cleanup, withinMs } = s;
  const [da, db, dc, watcher] = await Promise.all([0, 1, 2, 3].map(() => connect()));
  const lost: RegistrationLostInfo[] = [];
  for (const d of [da, db, dc]) d.on('lost', (info: RegistrationLostInfo) => lost.push(info));
  const a = await Endpoint.create({ nodeId: `a-${namespace}`, directory: da });
  const b = await Endpoint.create({ nodeId: `b-${namespace}`, directory: db });
  cleanup.push(() => a.close(), () => b.close());
  const record = nodeRecord(`c-${namespace}`);
  await dc.register(record);
  await dc.bindName(`c-name-${namespace}`, 0x10n);
  await db.bindName(`b-name-${namespace}`, VADDR);

  const events: DirectoryEvent[] = [];
  const watching = new AbortController();
  void (async () => {
    for await (const e of watcher.watch({ signal: watching.signal })) events.push(e);
  })().catch(() => undefined);
  cleanup.push(async () => watching.abort());

  const mailbox = b.openMailbox(VADDR, { epoch: 'ops', threshold: 1n, maxBuffers: 64 });
  for (let i = 0; i < 64; i++) mailbox.post(8);
  mailbox.listen((c) => mailbox.post(c.buffer));
  let putsDone = 0;
  const putErrors: unknown[] = [];
  let going = true;
  const puts = (async () => {
    while (going) {
      await a.put(b.nodeId, VADDR, Buffer.alloc(8, putsDone & 0xff), { timeout: 10_000 }).then(
        () => putsDone++,
        (e: unknown) => putErrors.push(e),
      );
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  // Puts by name ask the directory each time: through the failover each lands or fails typed.
  const byName = new Map<string, number>();
  const named = (async () => {
    while (going) {
      const outcome = await Promise.race([
        a.putNamed(`b-name-${namespace}`, Buffer.alloc(8, 0xab), { timeout: 10_000 }).then(
          () => 'put',
          (e: unknown) => codeOf(Promise.reject(e)),
        ),
        new Promise<string>((r) => setTimeout(() => r('hung'), 20_000)),
      ]);
      byName.set(outcome, (byName.get(outcome) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const outcomes = new Map<string, number>();
  const resolves = (async () => {
    while (going) {
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
  await pollFor('a few puts first', () => putsDone >= 5, 10_000);

  await disturb();
  const fresh = await connect();
  for (const id of [a.nodeId, b.nodeId, record.nodeId]) await pollFor(`node ${id} after`, () => fresh.resolveNode(id), withinMs);
  expect(await pollFor('b name', () => fresh.resolveName(`b-name-${namespace}`), withinMs)).toMatchObject({ nodeId: b.nodeId, vaddr: VADDR });
  expect(await pollFor('c name', () => fresh.resolveName(`c-name-${namespace}`), withinMs)).toMatchObject({ nodeId: record.nodeId, vaddr: 0x10n });
  await da.bindName(`a-late-${namespace}`, 0x20n);
  expect((await fresh.resolveName(`a-late-${namespace}`))?.nodeId).toBe(a.nodeId);
  // A node that joins now is seen by the watcher.
  await fresh.register(nodeRecord(`d-${namespace}`));
  await pollFor('the watcher sees a join after', () => events.some((e) => e.type === 'join' && e.node.nodeId === `d-${namespace}`), withinMs);
  const before = putsDone;
  await pollFor('puts after', () => putsDone >= before + 5, 10_000);
  going = false;
  await Promise.all([puts, resolves, named]);

  expect(putErrors).toEqual([]);
  expect(lost).toEqual([]);
  expect(events.filter((e) => e.type === 'leave')).toEqual([]);
  expect(outcomes.get('hung') ?? 0).toBe(0);
  expect(outcomes.get('missing') ?? 0).toBe(0);
  for (const key of outcomes.keys()) expect(['record', 'ERR_RVMA_DIRECTORY_UNAVAILABLE']).toContain(key);
  expect(outcomes.get('record')).toBeGreaterThan(0);
  for (const key of byName.keys()) expect(['put', 'ERR_RVMA_DIRECTORY_UNAVAILABLE']).toContain(key);
  expect(byName.get('put')).toBeGreaterThan(0);
}
