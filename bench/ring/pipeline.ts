// bench:ring's scenario (c): the pipeline example (examples/pipeline) over the rvma ring and over
// the LEAP-style net.Socket ring, same model, prompt and tokens, no re-split and no kill: prefill
// and decode tokens/s, and the ratios. Each run also checks its tokens against a single process.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { median, table } from '../common/stats';

const LAUNCHER = path.join(__dirname, '..', '..', 'examples', 'pipeline', 'launcher.js');

interface Run {
  prefill: number;
  decode: number;
  /** Context switches per decoded token, summed over the workers (NaN when one did not report). */
  voluntary: number;
  involuntary: number;
}

export interface PipelineRow {
  id: string;
  label: string;
  env: Record<string, string>;
  /** Prefill and decode tokens/s over the net.Socket ring's, at least. */
  targets?: { prefill: number; decode: number };
}

export const PIPELINE_RINGS: PipelineRow[] = [
  { id: 'net', label: 'net.Socket ring (LEAP-style)', env: { RVMA_PIPELINE_RING: 'net' } },
  { id: 'shm', label: 'rvma ring, shm', env: { RVMA_PIPELINE_TRANSPORT: 'shm' }, targets: { prefill: 1.2, decode: 1.15 } },
  { id: 'tcp', label: 'rvma ring, tcp', env: { RVMA_PIPELINE_TRANSPORT: 'tcp' }, targets: { prefill: 1.0, decode: 1.0 } },
];

function runOnce(env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [LAUNCHER], {
      env: { ...process.env, RVMA_PIPELINE_RESPLIT_AT: 'off', RVMA_PIPELINE_KILL_AT: 'off', RVMA_PIPELINE_JSON: '1', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code !== 0 || !line) return reject(new Error(`the pipeline example failed (exit ${code}):\n${out}`));
      const r = JSON.parse(line.slice(7)) as {
        prefillTokensPerSecond: number;
        decodeTokensPerSecond: number;
        decodeSwitches: ({ voluntary: number; involuntary: number } | null)[];
      };
      const sum = (k: 'voluntary' | 'involuntary'): number => r.decodeSwitches.reduce((s, w) => s + (w ? w[k] : NaN), 0);
      resolve({ prefill: r.prefillTokensPerSecond, decode: r.decodeTokensPerSecond, voluntary: sum('voluntary'), involuntary: sum('involuntary') });
    });
  });
}

/**
 * The prompt prefilled: the example's 32 tokens go through in about 60 ms, too short to time
 * (prefill tokens/s of one ring spread from 226 to 764 over runs, same hour); 160 leave room
 * for the 64 decoded tokens within the model's 256 positions.
 */
const PROMPT_TOKENS = 160;
/** Repetitions of each ring: one run moves by a third when the shared host stalls a process. */
export const PIPELINE_REPS = 5;

/** Runs every ring `reps` times, interleaved (so load drifts hit all alike); medians and ratios. */
export async function pipelineScenario(reps: number, quick: boolean): Promise<{ text: string; medians: Record<string, Run> }> {
  const env: Record<string, string> = quick
    ? { RVMA_PIPELINE_TOKENS: '24', RVMA_PIPELINE_PROMPT: '16' }
    : { RVMA_PIPELINE_PROMPT: String(PROMPT_TOKENS) };
  const runs = new Map<string, Run[]>(PIPELINE_RINGS.map((r) => [r.id, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const ring of PIPELINE_RINGS) runs.get(ring.id)!.push(await runOnce({ ...env, ...ring.env }));
    console.log(`pipeline example: repetition ${rep + 1}/${reps} done`);
  }
  const medians: Record<string, Run> = {};
  for (const [id, r] of runs) {
    const of = (k: keyof Run): number => median(r.map((x) => x[k]));
    medians[id] = { prefill: of('prefill'), decode: of('decode'), voluntary: of('voluntary'), involuntary: of('involuntary') };
  }
  const net = medians.net;
  const rows = [['ring', 'prefill tokens/s', 'decode tokens/s', 'switches/token (vol.+invol.)', 'prefill / net', 'decode / net', 'target', 'met']];
  const spread = (values: number[]): string => `${median(values).toFixed(1)} [${Math.min(...values).toFixed(0)}..${Math.max(...values).toFixed(0)}]`;
  for (const ring of PIPELINE_RINGS) {
    const m = medians[ring.id];
    const r = runs.get(ring.id)!;
    const t = ring.targets;
    const ratios = [m.prefill / net.prefill, m.decode / net.decode];
    rows.push([
      ring.label,
      spread(r.map((x) => x.prefill)),
      spread(r.map((x) => x.decode)),
      `${m.voluntary.toFixed(2)}+${m.involuntary.toFixed(2)}`,
      t ? ratios[0].toFixed(2) : '-',
      t ? ratios[1].toFixed(2) : '-',
      t ? `>= ${t.prefill.toFixed(2)}; ${t.decode.toFixed(2)}` : '',
      t ? (ratios[0] >= t.prefill && ratios[1] >= t.decode ? 'pass' : 'MISS') : '',
    ]);
  }
  const text =
    `(c) the pipeline example (8 layers, d_model 256, on onnxruntime-node), 3 workers, ${quick ? 16 : PROMPT_TOKENS} prompt tokens, medians [min..max] of ${reps} runs each, tokens checked against a single process; ` +
    `switches/token: context switches of the 3 workers (all threads) per decoded token, from each one's first decode step to its last:\n` +
    table(rows);
  return { text, medians };
}
