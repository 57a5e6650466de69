// One demo worker: an endpoint for its task, a rendezvous manager, and a ring exchange:
// each step it sends tensors to the next rank and receives the previous rank's.
import {
  type Directory,
  Endpoint,
  MemoryDirectory,
  MemoryDirectoryHub,
  RedisDirectory,
  RendezvousMgr,
  createKey,
} from '../../src';
import { type FromWorker, type ToWorker, type WorkerConfig, type WorkerStats, taskName } from './protocol';
import { sameBytes, tensorFor } from './workload';

const send = (message: FromWorker) => process.send!(message);
const device = (rank: number) => `${taskName(rank)}/device:CPU:0`;

let hub: MemoryDirectoryHub | undefined;
let shutdown: (() => Promise<void>) | undefined;
let go: () => void;
const started = new Promise<void>((resolve) => (go = resolve));

process.on('message', (message: ToWorker) => {
  if (message.type === 'start') void run(message.config).catch((error: Error) => send({ type: 'failed', message: error.stack ?? String(error) }));
  else if (message.type === 'peers') hub?.add(message.records);
  else if (message.type === 'go') go();
  else if (message.type === 'stop') void (shutdown?.() ?? Promise.resolve()).finally(() => process.exit(0));
});

async function run(config: WorkerConfig): Promise<void> {
  let directory: Directory;
  if (config.redisUrl) {
    directory = await RedisDirectory.connect({ url: config.redisUrl, namespace: config.cluster });
  } else {
    hub = new MemoryDirectoryHub();
    directory = new MemoryDirectory(hub);
  }
  const endpoint = await Endpoint.create({
    listen: 'tcp://127.0.0.1:0',
    labels: [taskName(config.rank)],
    directory,
  });
  const mgr = RendezvousMgr.create(endpoint);
  shutdown = async () => {
    await mgr.close();
    await endpoint.close(); // deregisters from the directory
    await directory.close();
  };
  send({ type: 'ready', record: (await directory.resolveNode(endpoint.nodeId))! });
  await started;

  const prev = (config.rank + config.workers - 1) % config.workers;
  const next = (config.rank + 1) % config.workers;
  const prevIncarnation = (await directory.resolveLabel(taskName(prev)))!.incarnation;
  const stats: WorkerStats = { rank: config.rank, tensors: 0, bytes: 0, mismatches: 0, latenciesMs: [], firstStepMs: 0, counters: {}, transports: {} };

  for (let step = 1; step <= config.steps; step++) {
    const rendezvous = mgr.find(step);
    const recvs = [];
    for (let i = 0; i < config.tensorsPerStep; i++) {
      const key = createKey(device(prev), prevIncarnation, device(config.rank), `t${i}`);
      const begin = performance.now();
      recvs.push(
        rendezvous.recv(key, { timeout: 20_000 }).then(({ tensor, release }) => {
          const ms = performance.now() - begin;
          // Step 1 also makes the connections between workers: reported on its own.
          if (step === 1) stats.firstStepMs = Math.max(stats.firstStepMs, ms);
          else stats.latenciesMs.push(ms);
          stats.tensors++;
          stats.bytes += (tensor.data as Float32Array).byteLength;
          if (!sameBytes(tensor, tensorFor(step, prev, i))) stats.mismatches++;
          release?.(); // checked: its buffer serves a later step's recv
        }),
      );
    }
    for (let i = 0; i < config.tensorsPerStep; i++) {
      rendezvous.send(createKey(device(config.rank), endpoint.incarnation, device(next), `t${i}`), tensorFor(step, config.rank, i));
    }
    await Promise.all(recvs);
    if (step > 2) mgr.cleanup(step - 2); // the next rank may still be reading step - 1
  }
  stats.counters = { ...mgr.counters };
  for (const peer of endpoint.peers()) stats.transports[peer.provider] = (stats.transports[peer.provider] ?? 0) + 1;
  send({ type: 'done', stats });
  // Keep serving until the launcher, having every worker's result, stops us.
}
