// One process of the pipeline example: joins the ring, loads its layer range, and either runs
// the head (rank 0) or serves frames: run its layers on each frame from the previous rank and
// send the result on (the tail only when the head waits for it). Control records are applied
// as they come; a lost rank makes it re-form the ring with the others.
import { Endpoint, RedisDirectory, Ring, RvmaError } from '../../src';
import { NetRing } from '../../support/net-ring';
import { openKvMailbox } from './kv-move';
import { ensureModel } from './model/build';
import { Head, LayerRunner } from './model/runtime';
import { runHead } from './head';
import { FLAG_NEED_REPLY, type FromWorker, type ToWorker, type WorkerConfig, activationHeader, evenSplit, rangeLayers, readActivationHeader } from './protocol';
import { type Pipe, netPipe, ringPipe } from './pipe';
import { type Control, Stage } from './stage';
import type { SwitchesPerToken } from './switches';

const tell = (m: FromWorker): void => void process.send?.(m);
let stopping = false;
const code = (e: unknown): string | undefined => (e instanceof RvmaError ? e.code : undefined);

async function serve(stage: Stage, promptLength: number): Promise<void> {
  const { pipe } = stage;
  const ring = stage.control?.ring;
  const control = (async () => {
    for (; ring; ) {
      let m;
      try {
        m = await ring.control();
      } catch (error) {
        if (code(error) === 'ERR_RVMA_CLOSED') return;
        throw error;
      }
      await stage.apply(m).catch((e: unknown) => {
        if (code(e) !== 'ERR_RVMA_PEER_LOST') throw e; // the data loop re-forms the ring
      });
    }
  })();
  for (;;) {
    try {
      const frame = await pipe.recvPrev();
      const { pos, flags } = readActivationHeader(frame.header);
      const hidden = new Float32Array(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength / 4);
      const out = await stage.run(hidden, pos >= promptLength);
      frame.release(); // the layers have read it
      if (pipe.rank < pipe.size - 1 || flags === FLAG_NEED_REPLY) {
        pipe.sendNext(activationHeader(pos, flags), out).catch(() => undefined); // a loss shows in recvPrev
      }
    } catch (error) {
      if (code(error) === 'ERR_RVMA_CLOSED' || stopping) break;
      if (code(error) !== 'ERR_RVMA_PEER_LOST' || !ring) throw error;
      // At the end the head leaves first: the reform then ends with this ring's close().
      await ring.reform({ timeout: 20_000 }).catch((e: unknown) => {
        if (!ring.closed) throw e;
      });
    }
  }
  await control;
}

/** The rvma ring: an endpoint, the ring, the KV mailbox. */
async function rvmaPipe(config: WorkerConfig, directory: RedisDirectory): Promise<{ pipe: Pipe; control: Control; close(): Promise<void> }> {
  const endpoint = await Endpoint.create({ nodeId: `pipeline-${config.index}-${process.pid}`, directory, listen: config.listen, progress: config.progress });
  const frameBytes = 8 + config.model.dModel * 4;
  const ring = await Ring.join(endpoint, { group: config.group, size: config.workers, rank: config.index, frameBytes, timeout: 60_000 });
  const control = { endpoint, ring, kvMailbox: openKvMailbox(endpoint, config.model) };
  return { pipe: ringPipe(ring), control, close: async () => (await ring.close(), await endpoint.close()) };
}

/** The LEAP-style net.Socket ring, ranks in launch order. */
async function netPipe_(config: WorkerConfig, directory: RedisDirectory): Promise<{ pipe: Pipe; control: undefined; close(): Promise<void> }> {
  const limits = { headerBytes: 8, frameBytes: 8 + config.model.dModel * 4 };
  const net = await NetRing.join(directory, config.group, config.index, config.workers, limits);
  return { pipe: netPipe(net), control: undefined, close: () => net.close() };
}

async function start(config: WorkerConfig): Promise<SwitchesPerToken | undefined> {
  const cfg = config.model;
  // Every worker starts at once on one host: give Redis longer than the 2 s default to answer.
  const directory = await RedisDirectory.connect({ url: config.redisUrl, namespace: config.cluster, ttlMs: 2000, connectTimeoutMs: 10_000 });
  const modelDir = await ensureModel(cfg);
  const link = config.ring === 'net' ? await netPipe_(config, directory) : await rvmaPipe(config, directory);
  const { pipe } = link;
  const ranges = evenSplit(cfg.layers, pipe.size);
  const runner = await LayerRunner.create(cfg, modelDir, rangeLayers(ranges[pipe.rank]));
  const stage = new Stage(cfg, modelDir, pipe, link.control, runner, ranges);
  tell({ type: 'ready', index: config.index, nodeId: link.control?.endpoint.nodeId ?? `net-${config.index}` });
  const stopped = new Promise<void>((resolve) => process.on('message', (m: ToWorker) => m.type === 'stop' && resolve()));
  if (pipe.rank === 0) {
    const head = await Head.create(cfg, modelDir);
    const kill = (nodeId: string): Promise<void> =>
      new Promise((resolve) => {
        const killed = (m: ToWorker): void => {
          if (m.type !== 'killed') return;
          process.off('message', killed);
          resolve();
        };
        process.on('message', killed);
        tell({ type: 'kill', nodeId });
      });
    const report = await runHead(stage, head, config, kill);
    tell({ type: 'report', report });
    await stopped;
    stopping = true;
    await head.close();
    await link.close();
  } else {
    const serving = serve(stage, config.prompt.length);
    await stopped;
    stopping = true;
    await link.close();
    if (config.ring === 'rvma') await serving; // a net.Socket ring's recv does not end on close
  }
  await stage.runner.close();
  await directory.close();
  return stage.switches.perToken();
}

process.once('message', (m: ToWorker) => {
  if (m.type !== 'start') return;
  start(m.config).then(
    // Exits once the launcher has the message (sent before exit, it could be lost).
    (perToken) => process.send!({ type: 'switches', index: m.config.index, perToken } satisfies FromWorker, () => process.exit(0)),
    (error: Error) => {
      tell({ type: 'failed', message: String(error.stack ?? error) });
      process.exit(1);
    },
  );
});
