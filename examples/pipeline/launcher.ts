// `npm run demo:pipeline`: pipeline-parallel inference over an rvma ring on this machine. Forks
// N workers (rank 0 is the head), generates greedily, re-splits the layers mid-generation with
// their KV caches, kills a worker and recovers on the survivors, and checks every generated
// token against a single-process run of the same model.
import { type ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { privateRedis } from '../../support/private-redis';
import { ensureModel } from './model/build';
import { DEFAULT_CONFIG, type ModelConfig, TINY_CONFIG } from './model/config';
import { makePrompt, referenceGenerate } from './model/runtime';
import { type FromWorker, type HeadReport, type ToWorker, type WorkerConfig } from './protocol';
import type { SwitchesPerToken } from './switches';

const env = (name: string, fallback: number): number => (process.env[name] === undefined ? fallback : Number(process.env[name]));
const WORKERS = env('RVMA_PIPELINE_WORKERS', 3);
const MODEL: ModelConfig = process.env.RVMA_PIPELINE_MODEL === 'tiny' ? { ...TINY_CONFIG } : { ...DEFAULT_CONFIG };
if (process.env.RVMA_PIPELINE_LAYERS) MODEL.layers = Number(process.env.RVMA_PIPELINE_LAYERS);
const PROMPT = env('RVMA_PIPELINE_PROMPT', process.env.RVMA_PIPELINE_MODEL === 'tiny' ? 6 : 32);
const NEW_TOKENS = env('RVMA_PIPELINE_TOKENS', process.env.RVMA_PIPELINE_MODEL === 'tiny' ? 12 : 64);
// 'off' disables the re-split or the kill; by default they happen at a third and two thirds.
const step = (name: string, at: number): number | undefined => (process.env[name] === 'off' ? undefined : env(name, at));
const RESPLIT_AT = process.env.RVMA_PIPELINE_RING === 'net' ? undefined : step('RVMA_PIPELINE_RESPLIT_AT', Math.floor(NEW_TOKENS / 3));
const KILL_AT = WORKERS > 2 && process.env.RVMA_PIPELINE_RING !== 'net' ? step('RVMA_PIPELINE_KILL_AT', Math.floor((2 * NEW_TOKENS) / 3)) : undefined;
const TRANSPORT = process.env.RVMA_PIPELINE_TRANSPORT ?? 'shm';
// 'net': the LEAP-style net.Socket ring instead of rvma's (for comparison: no re-split, no kill).
const RING: 'rvma' | 'net' = process.env.RVMA_PIPELINE_RING === 'net' ? 'net' : 'rvma';
const DEADLINE_MS = env('RVMA_PIPELINE_DEADLINE_MS', 120_000);

function listenFor(index: number): string {
  return TRANSPORT === 'tcp' ? 'tcp://127.0.0.1:0' : `shm://rvma-pipeline-${process.pid}-${index}`;
}

async function main(): Promise<void> {
  const prompt = makePrompt(MODEL, PROMPT, 1);
  console.log(
    `rvma pipeline: ${WORKERS} workers over ${RING === 'net' ? 'a net.Socket ring' : TRANSPORT}, a ${MODEL.layers}-layer model (d ${MODEL.dModel}), ` +
      `prompt ${PROMPT} tokens, ${NEW_TOKENS} new; re-split at token ${RESPLIT_AT ?? '-'}, kill at token ${KILL_AT ?? '-'}`,
  );
  await ensureModel(MODEL); // once here, not in every worker at the same time
  const refBegan = performance.now();
  const reference = await referenceGenerate(MODEL, prompt, NEW_TOKENS);
  const refSeconds = (performance.now() - refBegan) / 1000;
  const redis = await privateRedis();
  const children = new Map<string, ChildProcess>();
  const all: ChildProcess[] = [];
  let killed: string | undefined;
  const switches: (SwitchesPerToken | undefined)[] = [];
  const timer = setTimeout(() => fail(`no result within ${DEADLINE_MS / 1000} s`), DEADLINE_MS);
  function fail(message: string): never {
    for (const child of all) child.kill('SIGKILL');
    console.error(`pipeline failed: ${message}`);
    process.exit(1);
  }

  const report = await new Promise<HeadReport>((resolve) => {
    for (let index = 0; index < WORKERS; index++) {
      const child = fork(path.join(__dirname, 'worker.js'), { stdio: 'inherit' });
      all.push(child);
      child.on('exit', (code, signal) => {
        if (![...children.entries()].some(([id, c]) => c === child && id === killed)) fail(`worker ${index} exited (${signal ?? code})`);
      });
      child.on('message', (m: FromWorker) => {
        if (m.type === 'failed') fail(`worker ${index}: ${m.message}`);
        if (m.type === 'ready') children.set(m.nodeId, child);
        if (m.type === 'kill') {
          killed = m.nodeId;
          console.log(`  killing ${m.nodeId} (SIGKILL)`);
          const victim = children.get(m.nodeId);
          victim?.once('exit', () => child.send({ type: 'killed' } satisfies ToWorker));
          victim?.kill('SIGKILL');
        }
        if (m.type === 'report') resolve(m.report);
        if (m.type === 'switches') switches[m.index] = m.perToken;
      });
      const config: WorkerConfig = {
        index,
        workers: WORKERS,
        model: MODEL,
        prompt,
        newTokens: NEW_TOKENS,
        resplitAt: RESPLIT_AT,
        killAt: KILL_AT,
        redisUrl: redis.url,
        cluster: `pipeline-${process.pid}`,
        group: 'pipeline',
        listen: listenFor(index),
        progress: process.env.RVMA_PIPELINE_PROGRESS === 'thread' ? 'thread' : 'loop',
        ring: RING,
      };
      child.send({ type: 'start', config } satisfies ToWorker);
    }
  });
  clearTimeout(timer);
  await Promise.all(
    all
      .filter((c) => c.exitCode === null && c.signalCode === null)
      .map((child) => {
        child.removeAllListeners('exit');
        // Its channel closes after its last message (its context switches) has been read.
        const exited = Promise.all([new Promise((resolve) => child.once('exit', resolve)), new Promise((resolve) => child.once('disconnect', resolve))]);
        const force = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.send({ type: 'stop' } satisfies ToWorker);
        return exited.then(() => clearTimeout(force));
      }),
  );
  await redis.stop();

  const rows: [string, string][] = [
    ['prefill', `${report.prefillTokensPerSecond.toFixed(1)} tokens/s`],
    ['decode', `${report.decodeTokensPerSecond.toFixed(1)} tokens/s`],
    ['single-process run', `${refSeconds.toFixed(2)} s (loading the model included)`],
    ['per-hop latency', report.hopLatencyUs === undefined ? '-' : `${report.hopLatencyUs.toFixed(0)} µs (decode round trip less layer compute, per hop)`],
    ['recovery', report.recoveryMs === undefined ? '-' : `${report.recoveryMs.toFixed(0)} ms (re-form, reload, feed the conversation again)`],
    ['context switches', `${switches.map((s) => (s ? `${s.voluntary.toFixed(2)}+${s.involuntary.toFixed(2)}` : '-')).join(' ')} per decoded token, by worker (voluntary+involuntary)`],
  ];
  for (const s of report.splits) {
    rows.push([`split from token ${s.step}`, `${s.ranges.map((r) => `[${r.start},${r.end})`).join(' ')}  (${s.why})`]);
  }
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  const same = report.tokens.length === reference.length && report.tokens.every((t, i) => t === reference[i]);
  console.log(`  tokens     ${report.tokens.join(' ')}`);
  if (!same) {
    console.log(`  reference  ${reference.join(' ')}`);
    fail('the pipeline generated other tokens than the single-process run');
  }
  console.log(`every one of the ${NEW_TOKENS} tokens equals the single-process run`);
  // For bench:ring, which runs the example over both rings.
  if (process.env.RVMA_PIPELINE_JSON) console.log(`RESULT ${JSON.stringify({ ...report, decodeSwitches: switches })}`);
}

main().catch((error: Error) => {
  console.error(`pipeline failed: ${error.stack ?? error}`);
  process.exit(1);
});
