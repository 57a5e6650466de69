// One process of the pipeline example: joins the ring, loads its layer range, and either runs
// the head (rank 0) or serves frames: run its layers on each frame from the previous rank and
// send the result on (the tail only when the head waits for it). Control records are applied
// as they come; a lost rank makes it re-form the ring with the others.
import { Endpoint, RedisDirectory, Ring, RvmaError } from '../../src';
import { openKvMailbox } from './kv-move';
import { ensureModel } from './model/build';
import { Head, LayerRunner } from './model/runtime';
import { runHead } from './head';
import { FLAG_NEED_REPLY, FromWorker, ToWorker, WorkerConfig, activationHeader, evenSplit, rangeLayers, readActivationHeader } from './protocol';
import { Stage } from './stage';

const tell = (m: FromWorker): void => void process.send?.(m);
const code = (e: unknown): string | undefined => (e instanceof RvmaError ? e.code : undefined);

async function serve(stage: Stage, promptLength: number): Promise<void> {
  const { ring } = stage;
  const control = (async () => {
    for (;;) {
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
      const frame = await ring.recvPrev();
      const { pos, flags } = readActivationHeader(frame.header);
      const hidden = new Float32Array(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength / 4);
      const out = await stage.run(hidden, pos >= promptLength);
      frame.release(); // the layers have read it
      if (ring.rank < ring.size - 1 || flags === FLAG_NEED_REPLY) {
        ring.sendNext([activationHeader(pos, flags), out]).catch(() => undefined); // a loss shows in recvPrev
      }
    } catch (error) {
      if (code(error) === 'ERR_RVMA_CLOSED') break;
      if (code(error) !== 'ERR_RVMA_PEER_LOST') throw error;
      // At the end the head leaves first: the reform then ends with this ring's close().
      await ring.reform({ timeout: 20_000 }).catch((e: unknown) => {
        if (!ring.closed) throw e;
      });
    }
  }
  await control;
}

async function start(config: WorkerConfig): Promise<void> {
  const cfg = config.model;
  const directory = await RedisDirectory.connect({ url: config.redisUrl, cluster: config.cluster, ttlMs: 2000 });
  const endpoint = await Endpoint.create({ nodeId: `pipeline-${config.index}-${process.pid}`, directory, listen: config.listen, progress: config.progress });
  const modelDir = await ensureModel(cfg);
  const frameBytes = 8 + cfg.dModel * 4;
  const ring = await Ring.join(endpoint, { group: config.group, size: config.workers, rank: config.index, frameBytes, timeout: 60_000 });
  const ranges = evenSplit(cfg.layers, ring.size);
  const runner = await LayerRunner.create(cfg, modelDir, rangeLayers(ranges[ring.rank]));
  const stage = new Stage(cfg, modelDir, endpoint, ring, openKvMailbox(endpoint, cfg), runner, ranges);
  tell({ type: 'ready', index: config.index, nodeId: endpoint.nodeId });
  const stopped = new Promise<void>((resolve) => process.on('message', (m: ToWorker) => m.type === 'stop' && resolve()));
  if (ring.rank === 0) {
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
    await head.close();
    await ring.close();
  } else {
    const serving = serve(stage, config.prompt.length);
    await stopped;
    await ring.close();
    await serving;
  }
  await stage.runner.close();
  await endpoint.close();
  await directory.close();
}

process.once('message', (m: ToWorker) => {
  if (m.type !== 'start') return;
  start(m.config).then(
    () => process.exit(0),
    (error: Error) => {
      tell({ type: 'failed', message: String(error.stack ?? error) });
      process.exit(1);
    },
  );
});
