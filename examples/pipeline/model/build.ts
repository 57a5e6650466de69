// Builds the pipeline example's ONNX graphs (embed, one per layer, lm head) into a cache
// directory keyed by the config, so processes that start together share one copy.
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type ModelConfig, headDim, validateConfig } from './config';
import { GraphBuilder } from './graph';
import { embedWeights, headWeights, layerWeights } from './weights';

// Part of the cache key: bump it whenever a graph or the weight scheme changes, so a stale
// cache from an older build is never picked up.
const FORMAT = 'rvma-pipeline-model/2';
const RMS_EPS = 1e-5;
// Large enough that exp() underflows to exactly 0, finite so a fully masked row cannot be NaN.
export const MASK_NEG = -1e9;

export function configHash(cfg: ModelConfig): string {
  const { layers, dModel, heads, ffnDim, vocab, maxSeq, seed } = cfg;
  const canonical = JSON.stringify([FORMAT, layers, dModel, heads, ffnDim, vocab, maxSeq, seed]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

export function modelDir(cfg: ModelConfig, root: string = os.tmpdir()): string {
  return path.join(root, `rvma-pipeline-model-${configHash(cfg)}`);
}

export const embedFile = (dir: string) => path.join(dir, 'embed.onnx');
export const layerFile = (dir: string, layer: number) => path.join(dir, `layer-${layer}.onnx`);
export const headFile = (dir: string) => path.join(dir, 'lm_head.onnx');

function rmsNorm(g: GraphBuilder, x: string, gain: string): string {
  const meanSq = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
  const rms = g.op('Sqrt', [g.op('Add', [meanSq, g.floatScalar(RMS_EPS)])]);
  return g.op('Mul', [g.op('Div', [x, rms]), gain]);
}

/** token [T] int64, position [T] int64 -> hidden [T, d]. */
export function buildEmbed(cfg: ModelConfig): Uint8Array {
  const w = embedWeights(cfg);
  const d = cfg.dModel;
  const g = new GraphBuilder('embed');
  const token = g.int64Input('token', ['T']);
  const position = g.int64Input('position', ['T']);
  const tok = g.op('Gather', [g.floatWeight('token_table', [cfg.vocab, d], w.token), token], { axis: 0 });
  const pos = g.op('Gather', [g.floatWeight('position_table', [cfg.maxSeq, d], w.position), position], { axis: 0 });
  g.op('Add', [tok, pos], {}, 'hidden');
  g.floatOutput('hidden', ['T', d]);
  return g.encode();
}

/**
 * One pre-norm decoder layer with a KV cache:
 * hidden [T, d], past_k/past_v [P, H, hd], mask [T, P+T] (additive)
 * -> out [T, d], new_k/new_v [T, H, hd].
 * The cache is position-major and only the new positions come out: the runner appends them to
 * buffers it allocated once. (Returning the whole cache, as an ONNX export usually does, made
 * onnxruntime allocate the cache anew for every token and layer: hundreds of KB a token, whose
 * garbage collection then took a large share of the decode time.)
 */
export function buildLayer(cfg: ModelConfig, layer: number): Uint8Array {
  const w = layerWeights(cfg, layer);
  const { dModel: d, heads: H, ffnDim: f } = cfg;
  const hd = headDim(cfg);
  const g = new GraphBuilder(`layer${layer}`);
  const hidden = g.floatInput('hidden', ['T', d]);
  const pastK = g.floatInput('past_k', ['P', H, hd]);
  const pastV = g.floatInput('past_v', ['P', H, hd]);
  const mask = g.floatInput('mask', ['T', 'S']);

  const splitHeads = g.int64Const([-1, H, hd]);
  const byHead = (x: string) => g.op('Transpose', [x], { perm: [1, 0, 2] }); // [N, H, hd] -> [H, N, hd]
  const rows = (x: string, output?: string) => g.op('Reshape', [x, splitHeads], {}, output); // [T, d] -> [T, H, hd]

  const n1 = rmsNorm(g, hidden, g.floatWeight('attn_norm', [d], w.attnNorm));
  const q = byHead(rows(g.op('MatMul', [n1, g.floatWeight('wq', [d, d], w.wq)])));
  const newK = rows(g.op('MatMul', [n1, g.floatWeight('wk', [d, d], w.wk)]), 'new_k');
  const newV = rows(g.op('MatMul', [n1, g.floatWeight('wv', [d, d], w.wv)]), 'new_v');
  const presentK = g.op('Concat', [byHead(pastK), byHead(newK)], { axis: 1 }); // [H, S, hd]
  const presentV = g.op('Concat', [byHead(pastV), byHead(newV)], { axis: 1 });

  const scores = g.op('MatMul', [q, g.op('Transpose', [presentK], { perm: [0, 2, 1] })]); // [H, T, S]
  const scaled = g.op('Mul', [scores, g.floatScalar(1 / Math.sqrt(hd))]);
  const probs = g.op('Softmax', [g.op('Add', [scaled, mask])], { axis: -1 });
  const ctx = g.op('Transpose', [g.op('MatMul', [probs, presentV])], { perm: [1, 0, 2] }); // [T, H, hd]
  const merged = g.op('Reshape', [ctx, g.int64Const([-1, d])]);
  const h1 = g.op('Add', [hidden, g.op('MatMul', [merged, g.floatWeight('wo', [d, d], w.wo)])]);

  const n2 = rmsNorm(g, h1, g.floatWeight('mlp_norm', [d], w.mlpNorm));
  const up = g.op('MatMul', [n2, g.floatWeight('w1', [d, f], w.w1)]);
  const act = g.op('Mul', [up, g.op('Sigmoid', [up])]); // SiLU
  const down = g.op('MatMul', [act, g.floatWeight('w2', [f, d], w.w2)]);
  g.op('Add', [h1, down], {}, 'out');

  g.floatOutput('out', ['T', d]);
  g.floatOutput('new_k', ['T', H, hd]);
  g.floatOutput('new_v', ['T', H, hd]);
  return g.encode();
}

/** hidden [T, d] -> logits [T, vocab], after the final RMSNorm. */
export function buildHead(cfg: ModelConfig): Uint8Array {
  const w = headWeights(cfg);
  const d = cfg.dModel;
  const g = new GraphBuilder('lm_head');
  const hidden = g.floatInput('hidden', ['T', d]);
  const n = rmsNorm(g, hidden, g.floatWeight('final_norm', [d], w.norm));
  g.op('MatMul', [n, g.floatWeight('lm_head', [d, cfg.vocab], w.out)], {}, 'logits');
  g.floatOutput('logits', ['T', cfg.vocab]);
  return g.encode();
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/** Write-then-rename: a reader sees either no file or a whole one, whoever wins the race. */
async function writeAtomic(file: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await fs.writeFile(tmp, bytes);
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/** Returns the model directory for cfg, building only the graphs not already there. */
export async function ensureModel(cfg: ModelConfig, root?: string): Promise<string> {
  validateConfig(cfg);
  const dir = modelDir(cfg, root);
  await fs.mkdir(dir, { recursive: true });
  const wanted: [string, () => Uint8Array][] = [
    [embedFile(dir), () => buildEmbed(cfg)],
    [headFile(dir), () => buildHead(cfg)],
  ];
  for (let i = 0; i < cfg.layers; i++) wanted.push([layerFile(dir, i), () => buildLayer(cfg, i)]);
  for (const [file, build] of wanted) {
    if (!(await exists(file))) await writeAtomic(file, build());
  }
  return dir;
}
