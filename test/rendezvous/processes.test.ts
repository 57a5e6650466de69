// The rendezvous across real processes, over tcp and over shm (the default between processes
// of one host): each process has its own Endpoint listening on TCP and its own
// MemoryDirectory, whose hub is seeded with the other processes' records (as the demo's
// launcher does). Tensors go both ways with exact bytes; a sender killed with SIGKILL while a
// recv waits on it fails that recv with ERR_RVMA_PEER_LOST.
import { once } from 'node:events';
import { Endpoint, type EndpointOptions, MemoryDirectory, MemoryDirectoryHub, type NodeRecord, RendezvousMgr, type Tensor, createKey } from '../../src';
import { type Child, trackChildren } from '../helpers/children';
import { expectRejects } from '../helpers/errors';
import { device, task, uniqueJob } from '../helpers/rendezvous';

interface Spec {
  dtype: string;
  shape: number[];
  seed: number;
}
interface Digest {
  dtype: string;
  shape: number[];
  sha256: string;
}
// Shared with the children, so both sides build the same tensors.
const tensors = require('../fixtures/rendezvous-tensors.js') as { makeTensor(spec: Spec): Tensor; digest(t: Tensor): Digest };

const children = trackChildren('each');
const WAIT = { timeout: 15_000 };

/** One of each dtype, plus a 4 MiB tensor that takes many socket reads. */
function specs(seed: number): Spec[] {
  return [
    { dtype: 'float16', shape: [7, 3], seed: seed + 1 },
    { dtype: 'bfloat16', shape: [5], seed: seed + 2 },
    { dtype: 'float32', shape: [1024, 1024], seed: seed + 3 },
    { dtype: 'float64', shape: [3, 3, 3], seed: seed + 4 },
    { dtype: 'int8', shape: [33], seed: seed + 5 },
    { dtype: 'int16', shape: [4, 4], seed: seed + 6 },
    { dtype: 'int32', shape: [100], seed: seed + 7 },
    { dtype: 'int64', shape: [2, 9], seed: seed + 8 },
    { dtype: 'uint8', shape: [1], seed: seed + 9 },
    { dtype: 'uint16', shape: [12], seed: seed + 10 },
    { dtype: 'uint32', shape: [6, 2], seed: seed + 11 },
    { dtype: 'uint64', shape: [8], seed: seed + 12 },
    { dtype: 'bool', shape: [3, 5], seed: seed + 13 },
    { dtype: 'string', shape: [4, 4], seed: seed + 14 },
  ];
}

interface Local {
  endpoint: Endpoint;
  mgr: RendezvousMgr;
  hub: MemoryDirectoryHub;
  record: NodeRecord;
}

// How each process's endpoint is made, per transport: records carry an shm address unless shm
// is off, and auto then routes the processes of this host over it.
const TRANSPORTS: [string, EndpointOptions][] = [
  ['tcp', { shm: { enabled: false } }],
  ['shm', {}],
];

let local: Local | undefined;
afterEach(async () => {
  await local?.mgr.close();
  await local?.endpoint.close();
  local = undefined;
});

/** This (test) process as one task: an endpoint on TCP with a directory of its own. */
async function startLocal(taskName: string, options: EndpointOptions): Promise<Local> {
  const hub = new MemoryDirectoryHub();
  const directory = new MemoryDirectory(hub);
  const endpoint = await Endpoint.create({ labels: [taskName], listen: 'tcp://127.0.0.1:0', directory, ...options });
  const mgr = RendezvousMgr.create(endpoint);
  local = { endpoint, mgr, hub, record: (await directory.resolveNode(endpoint.nodeId))! };
  return local;
}

interface Worker {
  child: Child;
  record: NodeRecord;
  task: string;
}

async function startWorker(label: string, taskName: string, options: EndpointOptions): Promise<Worker> {
  const child = children.spawn(label, 'rendezvous-worker.js', [JSON.stringify({ task: taskName, endpoint: options })]);
  const ready = await child.next('ready', 15_000);
  return { child, record: ready.record as NodeRecord, task: taskName };
}

function keyFor(from: { task: string; incarnation: string }, to: string, name: string): string {
  return createKey(device(from.task), from.incarnation, device(to), name);
}

describe.each(TRANSPORTS)('rendezvous between this process and a child process (%s)', (transport, options) => {
  async function setUp() {
    const job = uniqueJob('proc');
    const me = await startLocal(task(job, 0), options);
    const worker = await startWorker('worker', task(job, 1), options);
    me.hub.add([worker.record]);
    await worker.child.request({ cmd: 'peers', records: [me.record, worker.record] });
    const meAsSender = { task: task(job, 0), incarnation: me.endpoint.incarnation };
    const workerAsSender = { task: worker.task, incarnation: worker.record.incarnation };
    return { job, me, worker, meAsSender, workerAsSender };
  }

  test('every dtype goes both ways with exact bytes, twice (the second step takes the direct path)', async () => {
    const { job, me, worker, meAsSender, workerAsSender } = await setUp();
    for (const step of [1, 2]) {
      const all = specs(step * 100);
      // To the child: it receives (replies carry digests), this process sends.
      const childGot = all.map((spec, i) =>
        worker.child.request({ cmd: 'recv', step, key: keyFor(meAsSender, worker.task, `out${i}`), timeout: WAIT.timeout }, 20_000),
      );
      all.forEach((spec, i) => me.mgr.find(step).send(keyFor(meAsSender, worker.task, `out${i}`), tensors.makeTensor(spec)));
      // From the child: this process receives, the child sends.
      const weGot = all.map((_, i) => me.mgr.find(step).recv(keyFor(workerAsSender, task(job, 0), `in${i}`), WAIT));
      await Promise.all(all.map((spec, i) => worker.child.request({ cmd: 'send', step, key: keyFor(workerAsSender, task(job, 0), `in${i}`), spec })));

      const replies = await Promise.all(childGot);
      replies.forEach((reply, i) => {
        expect({ dtype: reply.dtype, shape: reply.shape, sha256: reply.sha256, isDead: reply.isDead }).toEqual({
          ...tensors.digest(tensors.makeTensor(all[i])),
          isDead: false,
        });
      });
      const received = await Promise.all(weGot);
      received.forEach(({ tensor, isDead }, i) => {
        expect(isDead).toBe(false);
        expect(tensors.digest(tensor)).toEqual(tensors.digest(tensors.makeTensor(all[i])));
      });
    }
    expect(me.endpoint.peers()).toEqual([{ nodeId: worker.record.nodeId, provider: transport, detail: expect.any(String) }]);
    // Same shapes in step 2: every transfer in both directions went direct.
    const n = specs(0).length;
    expect(me.mgr.counters).toMatchObject({ requests: 2 * n, metaResponses: n, reRequests: n, directPuts: n, clonePuts: n, errors: 0 });
    const theirs = (await worker.child.request({ cmd: 'counters' })).counters;
    expect(theirs).toMatchObject({ requests: 2 * n, metaResponses: n, reRequests: n, directPuts: n, clonePuts: n, errors: 0 });
  }, 60_000);

  test('a dead tensor from the child arrives as meta only', async () => {
    const { job, me, worker, workerAsSender } = await setUp();
    const k = keyFor(workerAsSender, task(job, 0), 'dead');
    const got = me.mgr.find(1).recv(k, WAIT);
    await worker.child.request({ cmd: 'send', step: 1, key: k, spec: { dtype: 'float32', shape: [2, 2], seed: 1 }, isDead: true });
    const { tensor, isDead } = await got;
    expect(isDead).toBe(true);
    expect(tensor.shape).toEqual([2, 2]);
    expect(me.mgr.counters).toMatchObject({ metaResponses: 1, reRequests: 0, bytesReceived: 0 });
  });

  test('kill -9 of the sender while its request is parked: the pending recv rejects with ERR_RVMA_PEER_LOST', async () => {
    const { job, me, worker, workerAsSender } = await setUp();
    await worker.child.request({ cmd: 'watchServed', step: 1 });
    const k = keyFor(workerAsSender, task(job, 0), 'never-sent');
    // Observed from the start: the rejection may come before the kill's exit is reported.
    const outcome = expectRejects(me.mgr.find(1).recv(k, WAIT), 'ERR_RVMA_PEER_LOST', new RegExp(worker.record.nodeId));
    // The child has the request (parked: it never sends this key); then it dies.
    expect((await worker.child.next('served', 15_000)).key).toBe(k);
    const exit = await worker.child.kill();
    expect(exit.signal).toBe('SIGKILL');
    await outcome;
  }, 30_000);

  test('a receiver killed while its request is parked here: the tensor goes to the restarted receiver', async () => {
    const { me, worker, meAsSender } = await setUp();
    const k = keyFor(meAsSender, worker.task, 't');
    const served = new Promise<void>((resolve) => {
      const rv = me.mgr.find(1);
      const original = rv.recvLocal;
      rv.recvLocal = function (this: typeof rv, key, done) {
        rv.recvLocal = original;
        original.call(this, key, done);
        resolve();
      };
    });
    // The child's recv never completes: its reply is not awaited (the child dies).
    worker.child.send({ cmd: 'recv', id: -1, step: 1, key: k, timeout: WAIT.timeout });
    await served;
    const lost = once(me.endpoint, 'peerLost');
    await worker.child.kill();
    const [info] = (await lost) as [{ nodeId: string }];
    expect(info.nodeId).toBe(worker.record.nodeId);

    // The parked request went with its peer: the tensor sent now waits for the next request.
    const t = tensors.makeTensor({ dtype: 'int32', shape: [64], seed: 5 });
    me.mgr.find(1).send(k, t);
    const again = await startWorker('worker-2', worker.task, options);
    await again.child.request({ cmd: 'peers', records: [me.record] });
    const reply = await again.child.request({ cmd: 'recv', step: 1, key: k, timeout: WAIT.timeout }, 20_000);
    expect(reply.sha256).toBe(tensors.digest(t).sha256);
  }, 45_000);
});

describe.each(TRANSPORTS)('rendezvous between two child processes (%s; this process only relays their records)', (_, options) => {
  test('both directions, exact bytes', async () => {
    const job = uniqueJob('pair');
    const a = await startWorker('a', task(job, 0), options);
    const b = await startWorker('b', task(job, 1), options);
    const records = [a.record, b.record];
    await Promise.all([a.child.request({ cmd: 'peers', records }), b.child.request({ cmd: 'peers', records })]);
    const all = specs(500);
    const aToB = (i: number) => keyFor({ task: a.task, incarnation: a.record.incarnation }, b.task, `ab${i}`);
    const bToA = (i: number) => keyFor({ task: b.task, incarnation: b.record.incarnation }, a.task, `ba${i}`);
    const recvs = all.flatMap((_, i) => [
      b.child.request({ cmd: 'recv', step: 3, key: aToB(i), timeout: WAIT.timeout }, 20_000),
      a.child.request({ cmd: 'recv', step: 3, key: bToA(i), timeout: WAIT.timeout }, 20_000),
    ]);
    await Promise.all(
      all.flatMap((spec, i) => [
        a.child.request({ cmd: 'send', step: 3, key: aToB(i), spec }),
        b.child.request({ cmd: 'send', step: 3, key: bToA(i), spec: { ...spec, seed: spec.seed + 1000 } }),
      ]),
    );
    const replies = await Promise.all(recvs);
    all.forEach((spec, i) => {
      expect(replies[2 * i].sha256).toBe(tensors.digest(tensors.makeTensor(spec)).sha256);
      expect(replies[2 * i + 1].sha256).toBe(tensors.digest(tensors.makeTensor({ ...spec, seed: spec.seed + 1000 })).sha256);
      expect(replies[2 * i].shape).toEqual(spec.shape);
    });
  }, 60_000);
});
