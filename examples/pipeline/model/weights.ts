// Deterministic weights for the pipeline example: each tensor comes from its own seeded stream,
// so any process can derive any layer's weights from the config without computing the others.
import { mulberry32 } from '../../../support/mulberry32';
import { type ModelConfig, validateConfig } from './config';

/** FNV-1a of the model seed and a tensor name: one independent stream per tensor. */
export function streamSeed(seed: number, name: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * Uniform in [center - halfWidth, center + halfWidth). Uniform rather than Box–Muller normal
 * because Math.log/Math.cos are not required to round the same everywhere, while *, + and the
 * uint32 PRNG are exact.
 */
export function uniformTensor(seed: number, name: string, count: number, halfWidth: number, center = 0): Float32Array {
  const next = mulberry32(streamSeed(seed, name));
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = center + (2 * next() - 1) * halfWidth;
  return out;
}

/** Half-width giving standard deviation 1/sqrt(fanIn), which keeps each matmul variance-preserving. */
function fanInHalfWidth(fanIn: number): number {
  return Math.sqrt(3 / fanIn);
}

// Gains near 1 rather than exactly 1, so a wiring mistake in a norm shows up in the outputs.
const GAIN_JITTER = 0.1;

export interface EmbedWeights {
  token: Float32Array; // [vocab, dModel]
  position: Float32Array; // [maxSeq, dModel]
}

export interface LayerWeights {
  attnNorm: Float32Array; // [dModel]
  wq: Float32Array; // [dModel, dModel], x @ wq
  wk: Float32Array;
  wv: Float32Array;
  wo: Float32Array;
  mlpNorm: Float32Array; // [dModel]
  w1: Float32Array; // [dModel, ffnDim]
  w2: Float32Array; // [ffnDim, dModel]
}

export interface HeadWeights {
  norm: Float32Array; // [dModel]
  out: Float32Array; // [dModel, vocab]
}

export function embedWeights(cfg: ModelConfig): EmbedWeights {
  validateConfig(cfg);
  const d = cfg.dModel;
  return {
    // Unit variance for tokens; positions smaller so the token dominates the first layer's input.
    token: uniformTensor(cfg.seed, 'embed.token', cfg.vocab * d, Math.sqrt(3)),
    position: uniformTensor(cfg.seed, 'embed.position', cfg.maxSeq * d, Math.sqrt(3) * 0.5),
  };
}

export function layerWeights(cfg: ModelConfig, layer: number): LayerWeights {
  validateConfig(cfg);
  if (!Number.isInteger(layer) || layer < 0 || layer >= cfg.layers) throw new Error(`no layer ${layer} in a ${cfg.layers}-layer model`);
  const { dModel: d, ffnDim: f, seed } = cfg;
  const name = (t: string) => `layer${layer}.${t}`;
  return {
    attnNorm: uniformTensor(seed, name('attn_norm'), d, GAIN_JITTER, 1),
    wq: uniformTensor(seed, name('wq'), d * d, fanInHalfWidth(d)),
    wk: uniformTensor(seed, name('wk'), d * d, fanInHalfWidth(d)),
    wv: uniformTensor(seed, name('wv'), d * d, fanInHalfWidth(d)),
    wo: uniformTensor(seed, name('wo'), d * d, fanInHalfWidth(d)),
    mlpNorm: uniformTensor(seed, name('mlp_norm'), d, GAIN_JITTER, 1),
    w1: uniformTensor(seed, name('w1'), d * f, fanInHalfWidth(d)),
    w2: uniformTensor(seed, name('w2'), f * d, fanInHalfWidth(f)),
  };
}

export function headWeights(cfg: ModelConfig): HeadWeights {
  validateConfig(cfg);
  const d = cfg.dModel;
  return {
    norm: uniformTensor(cfg.seed, 'head.norm', d, GAIN_JITTER, 1),
    out: uniformTensor(cfg.seed, 'head.out', d * cfg.vocab, fanInHalfWidth(d)),
  };
}
