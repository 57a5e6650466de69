// The rendezvous across hosts: a TensorFlow task on each of two hosts (test/fixtures/
// rendezvous-worker.js, each with a MemoryDirectory seeded with the other's record, as the
// demo's launcher does), tensors of several dtypes both ways over tcp with exact bytes, twice
// (the second step takes the direct path); then one host's cable is pulled while a recv waits
// on it: the recv rejects with ERR_RVMA_PEER_LOST.
import { type NodeRecord, type Tensor, createKey } from '../../src';
import { type Child, trackChildren } from '../helpers/children';
import { device, task, uniqueJob } from '../helpers/rendezvous';
import { describeHosts } from './hosts';
import { type Host } from './bed';

jest.setTimeout(120_000);
interface Spec {
  dtype: string;
  shape: number[];
  seed: number;
}
const tensors = require('../fixtures/rendezvous-tensors.js') as { makeTensor(spec: Spec): Tensor; digest(t: Tensor): object };
const SPECS: Spec[] = [
  { dtype: 'float16', shape: [7, 3], seed: 1 },
  { dtype: 'float32', shape: [1024, 1024], seed: 2 },
  { dtype: 'int64', shape: [2, 9], seed: 3 },
  { dtype: 'bool', shape: [3, 5], seed: 4 },
  { dtype: 'string', shape: [4, 4], seed: 5 },
];
const TIMEOUT = 15_000;
const TCP = { keepaliveMs: 200, peerTimeoutMs: 1000, reconnectMs: 1000, connectTimeoutMs: 1000 };

describeHosts('the rendezvous across hosts', 2, (bed) => {
  const children = trackChildren('each');
  afterEach(() => bed().hosts.forEach((h) => bed().restore(h)));

  async function worker(host: Host, taskName: string): Promise<{ child: Child; record: NodeRecord; task: string }> {
    const endpoint = { listen: `tcp://${host.address}:0`, tcp: TCP };
    const child = children.spawn(`task@h${host.index}`, 'rendezvous-worker.js', [JSON.stringify({ task: taskName, endpoint })], undefined, bed().prefix(host));
    const ready = await child.next('ready', 30_000);
    return { child, record: ready.record as NodeRecord, task: taskName };
  }
  async function pair() {
    const job = uniqueJob('hosts');
    const [a, b] = await Promise.all([worker(bed().hosts[0], task(job, 0)), worker(bed().hosts[1], task(job, 1))]);
    for (const w of [a, b]) await w.child.request({ cmd: 'peers', records: [a.record, b.record] });
    const key = (from: typeof a, to: typeof a, name: string) => createKey(device(from.task), from.record.incarnation, device(to.task), name);
    return { a, b, key };
  }

  test('every tensor both ways with exact bytes, twice', async () => {
    const { a, b, key } = await pair();
    for (const step of [1, 2]) {
      for (const [from, to] of [[a, b], [b, a]]) {
        const got = SPECS.map((_, i) => to.child.request({ cmd: 'recv', step, key: key(from, to, `t${i}`), timeout: TIMEOUT }, 30_000));
        await Promise.all(SPECS.map((spec, i) => from.child.request({ cmd: 'send', step, key: key(from, to, `t${i}`), spec })));
        const replies = await Promise.all(got);
        replies.forEach((r, i) => expect({ dtype: r.dtype, shape: r.shape, sha256: r.sha256, isDead: r.isDead }).toEqual({ ...tensors.digest(tensors.makeTensor(SPECS[i])), isDead: false }));
      }
    }
    for (const w of [a, b]) expect((await w.child.request({ cmd: 'counters' })).counters).toMatchObject({ errors: 0 });
  });

  test('a recv waiting on the other host when its cable is pulled rejects with ERR_RVMA_PEER_LOST', async () => {
    const { a, b, key } = await pair();
    // A first tensor connects them; the next one is never sent.
    const first = b.child.request({ cmd: 'recv', step: 1, key: key(a, b, 'first'), timeout: TIMEOUT }, 30_000);
    await a.child.request({ cmd: 'send', step: 1, key: key(a, b, 'first'), spec: SPECS[0] });
    await first;
    const waiting = b.child.request({ cmd: 'recv', step: 1, key: key(a, b, 'never'), timeout: 30_000 }, 40_000).then(
      () => 'resolved',
      (e: Error & { code?: string }) => e.code ?? e.message,
    );
    await new Promise((r) => setTimeout(r, 300));
    const cutAt = Date.now();
    bed().cut(bed().hosts[0]);
    expect(await waiting).toBe('ERR_RVMA_PEER_LOST');
    expect(Date.now() - cutAt).toBeLessThan(TCP.peerTimeoutMs + TCP.reconnectMs + 10_000);
  });
});
