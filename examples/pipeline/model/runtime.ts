// Runs the pipeline example's model on onnxruntime-node: a LayerRunner per rank for its layer
// range (with KV caches that can move between ranks), a Head for embedding and sampling, and
// the single-process reference generation the pipeline must reproduce exactly.
import * as ort from 'onnxruntime-node';
import { ensureModel, embedFile, headFile, layerFile, MASK_NEG } from './build';
import { type ModelConfig, headDim, validateConfig } from './config';
import { type KvState, kvElements } from './kv';
import { mulberry32 } from '../../../support/mulberry32';
import { streamSeed } from './weights';

export type { KvState } from './kv';
export { decodeKv, encodeKv } from './kv';

// One thread per session: results then depend only on the inputs (no thread-count-dependent
// reduction splits), and the machine's two cores are shared by several worker processes.
const SESSION_OPTIONS: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
};

function openSession(file: string): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(file, SESSION_OPTIONS);
}

function floatData(t: ort.Tensor): Float32Array {
  if (t.type !== 'float32') throw new Error(`expected a float32 output, got ${t.type}`);
  return t.data as Float32Array;
}

/** Additive causal mask [T, past+T]: token t of this call sees the past and tokens 0..t. */
export function causalMask(past: number, tokens: number): Float32Array {
  const width = past + tokens;
  const mask = new Float32Array(tokens * width);
  for (let t = 0; t < tokens; t++) mask.fill(MASK_NEG, t * width + past + t + 1, (t + 1) * width);
  return mask;
}

function sortedUnique(layers: number[], cfg: ModelConfig): number[] {
  const sorted = [...layers].sort((a, b) => a - b);
  sorted.forEach((l, i) => {
    if (!Number.isInteger(l) || l < 0 || l >= cfg.layers) throw new Error(`no layer ${l} in a ${cfg.layers}-layer model`);
    if (i > 0 && sorted[i - 1] === l) throw new Error(`layer ${l} listed twice`);
  });
  return sorted;
}

/**
 * A layer's KV cache where the runner keeps it: room for maxSeq positions, allocated once,
 * position-major ([maxSeq, heads, headDim]), so a token's keys and values are appended and the
 * cache so far is a view of its start (the runner's position says how far).
 */
interface LayerCache {
  k: Float32Array;
  v: Float32Array;
}

/**
 * The layers one rank runs, each with its ORT session and KV cache. Calls must not overlap:
 * a rank handles one frame at a time, and a layer move happens between frames.
 */
export class LayerRunner {
  private readonly sessions = new Map<number, ort.InferenceSession>();
  private readonly caches = new Map<number, LayerCache>();
  private pos = 0;
  private busy = false;

  private constructor(
    private readonly cfg: ModelConfig,
    private readonly modelDir: string,
  ) {}

  static async create(cfg: ModelConfig, modelDir: string, layers: number[]): Promise<LayerRunner> {
    validateConfig(cfg);
    const runner = new LayerRunner(cfg, modelDir);
    await runner.addLayers(layers);
    return runner;
  }

  get layers(): number[] {
    return [...this.sessions.keys()].sort((a, b) => a - b);
  }

  /** Tokens this runner has processed; every cache it holds has exactly this length. */
  get position(): number {
    return this.pos;
  }

  /** Runs hidden [tokens, d] through every held layer in order, appending to each KV cache. */
  async run(hidden: Float32Array, tokens: number): Promise<Float32Array> {
    const { dModel: d, heads: H, maxSeq } = this.cfg;
    if (!Number.isInteger(tokens) || tokens < 1) throw new Error(`tokens must be a positive integer, got ${tokens}`);
    if (hidden.length !== tokens * d) throw new Error(`hidden has ${hidden.length} values, expected ${tokens} x ${d}`);
    if (this.pos + tokens > maxSeq) throw new Error(`position ${this.pos} + ${tokens} tokens exceeds maxSeq ${maxSeq}`);
    return this.exclusive(async () => {
      const hd = headDim(this.cfg);
      const past = this.pos;
      const mask = new ort.Tensor('float32', causalMask(past, tokens), [tokens, past + tokens]);
      const added: [LayerCache, Float32Array, Float32Array][] = [];
      let x = hidden;
      for (const layer of this.layers) {
        const cache = this.caches.get(layer)!;
        const out = await this.sessions.get(layer)!.run({
          hidden: new ort.Tensor('float32', x, [tokens, d]),
          past_k: new ort.Tensor('float32', cache.k.subarray(0, past * d), [past, H, hd]),
          past_v: new ort.Tensor('float32', cache.v.subarray(0, past * d), [past, H, hd]),
          mask,
        });
        x = floatData(out.out);
        added.push([cache, floatData(out.new_k), floatData(out.new_v)]);
      }
      // Appended only once every layer succeeded, so a failed call leaves the caches as they were.
      for (const [cache, k, v] of added) {
        cache.k.set(k, past * d);
        cache.v.set(v, past * d);
      }
      this.pos = past + tokens;
      return x;
    });
  }

  /**
   * Takes on layers. A runner that has seen tokens needs each new layer's cache at its own
   * position; an empty runner adopts the position of the caches it is given.
   */
  async addLayers(layers: number[], kv?: Map<number, KvState>): Promise<void> {
    const wanted = sortedUnique(layers, this.cfg);
    for (const l of wanted) if (this.sessions.has(l)) throw new Error(`layer ${l} is already here`);
    for (const l of kv?.keys() ?? []) if (!wanted.includes(l)) throw new Error(`KV given for layer ${l}, which is not being added`);
    const lengths = new Set([...(kv?.values() ?? [])].map((s) => s.length));
    if (lengths.size > 1) throw new Error(`KV caches of different lengths: ${[...lengths]}`);
    const target = this.sessions.size > 0 || lengths.size === 0 ? this.pos : [...lengths][0];
    const caches = wanted.map((l) => this.checkedCache(l, kv?.get(l), target));

    await this.exclusive(async () => {
      const opened = await Promise.allSettled(wanted.map((l) => openSession(layerFile(this.modelDir, l))));
      const failed = opened.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? r.value.release() : undefined)));
        throw failed.reason;
      }
      opened.forEach((r, i) => {
        this.sessions.set(wanted[i], (r as PromiseFulfilledResult<ort.InferenceSession>).value);
        this.caches.set(wanted[i], caches[i]);
      });
      this.pos = target;
    });
  }

  /** Gives up layers, handing back each one's KV cache for the runner that takes it over. */
  removeLayers(layers: number[]): Map<number, KvState> {
    if (this.busy) throw new Error('LayerRunner is busy: calls must not overlap');
    const gone = sortedUnique(layers, this.cfg);
    for (const l of gone) if (!this.sessions.has(l)) throw new Error(`layer ${l} is not here`);
    const out = new Map<number, KvState>();
    for (const l of gone) {
      const session = this.sessions.get(l)!;
      this.sessions.delete(l);
      // Freeing native memory needs no waiting for: nothing else refers to the session.
      session.release().catch(() => undefined);
      const { k, v } = this.caches.get(l)!;
      const n = this.pos * this.cfg.dModel;
      out.set(l, { layer: l, length: this.pos, heads: this.cfg.heads, headDim: headDim(this.cfg), k: k.slice(0, n), v: v.slice(0, n) });
      this.caches.delete(l);
    }
    return out;
  }

  async close(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    this.caches.clear();
    await Promise.all(sessions.map((s) => s.release()));
  }

  private checkedCache(layer: number, state: KvState | undefined, position: number): LayerCache {
    const H = this.cfg.heads;
    const hd = headDim(this.cfg);
    const room = this.cfg.maxSeq * this.cfg.dModel;
    const cache = { k: new Float32Array(room), v: new Float32Array(room) };
    if (!state) {
      // A layer without its history would silently compute a different model.
      if (position !== 0) throw new Error(`layer ${layer} needs its KV cache: this runner is at position ${position}`);
      return cache;
    }
    if (state.layer !== layer) throw new Error(`KV for layer ${state.layer} given as layer ${layer}`);
    if (state.heads !== H || state.headDim !== hd) throw new Error(`KV of layer ${layer} is ${state.heads}x${state.headDim}, model is ${H}x${hd}`);
    if (state.length !== position) throw new Error(`KV of layer ${layer} has length ${state.length}, runner is at ${position}`);
    if (state.length > this.cfg.maxSeq) throw new Error(`KV of layer ${layer} is longer than maxSeq ${this.cfg.maxSeq}`);
    const n = kvElements(H, state.length, hd);
    if (state.k.length !== n || state.v.length !== n) throw new Error(`KV of layer ${layer} has the wrong number of values`);
    cache.k.set(state.k);
    cache.v.set(state.v);
    return cache;
  }

  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.busy) throw new Error('LayerRunner is busy: calls must not overlap');
    this.busy = true;
    try {
      return await fn();
    } finally {
      this.busy = false;
    }
  }
}

/** The head rank's part of the model: token embedding, final norm + LM head, greedy sampling. */
export class Head {
  private constructor(
    readonly config: ModelConfig,
    private readonly embedSession: ort.InferenceSession,
    private readonly headSession: ort.InferenceSession,
  ) {}

  static async create(cfg: ModelConfig, modelDir: string): Promise<Head> {
    validateConfig(cfg);
    const [embed, head] = await Promise.all([openSession(embedFile(modelDir)), openSession(headFile(modelDir))]);
    return new Head(cfg, embed, head);
  }

  /** hidden [d] for one token at one position. */
  async embed(token: number, position: number): Promise<Float32Array> {
    if (!Number.isInteger(token) || token < 0 || token >= this.config.vocab) throw new Error(`token ${token} outside vocab ${this.config.vocab}`);
    if (!Number.isInteger(position) || position < 0 || position >= this.config.maxSeq) throw new Error(`position ${position} outside maxSeq ${this.config.maxSeq}`);
    const out = await this.embedSession.run({
      token: new ort.Tensor('int64', BigInt64Array.of(BigInt(token)), [1]),
      position: new ort.Tensor('int64', BigInt64Array.of(BigInt(position)), [1]),
    });
    return floatData(out.hidden);
  }

  /** logits [vocab] from one token's final hidden state [d]. */
  async logits(hidden: Float32Array): Promise<Float32Array> {
    if (hidden.length !== this.config.dModel) throw new Error(`hidden has ${hidden.length} values, expected ${this.config.dModel}`);
    const out = await this.headSession.run({ hidden: new ort.Tensor('float32', hidden, [1, this.config.dModel]) });
    return floatData(out.logits);
  }

  /** Greedy: the argmax, lowest index on a tie. */
  sample(logits: Float32Array): number {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    return best;
  }

  async close(): Promise<void> {
    await Promise.all([this.embedSession.release(), this.headSession.release()]);
  }
}

/** Runs one token's hidden state at `position` through every layer, however they are placed. */
export type Forward = (hidden: Float32Array, position: number) => Promise<Float32Array>;

/**
 * Greedy generation, one token per forward call, as the pipeline sends one frame per token:
 * feeds the prompt, then returns `newTokens` generated tokens (not the prompt). Feeding the
 * prompt in one call would be faster but takes other kernel paths that round differently
 * (about 1e-6), so a pipeline would no longer match bit for bit.
 */
export async function generate(head: Head, prompt: number[], newTokens: number, forward: Forward): Promise<number[]> {
  const cfg = head.config;
  if (prompt.length < 1) throw new Error('prompt must have at least one token');
  if (!Number.isInteger(newTokens) || newTokens < 0) throw new Error(`newTokens must be a non-negative integer, got ${newTokens}`);
  // The last generated token is never fed back, so it needs no position of its own.
  if (prompt.length + newTokens - 1 > cfg.maxSeq) throw new Error(`prompt ${prompt.length} + ${newTokens} new tokens exceeds maxSeq ${cfg.maxSeq}`);
  const out: number[] = [];
  if (newTokens === 0) return out;
  let hidden: Float32Array = new Float32Array(0);
  for (let p = 0; p < prompt.length; p++) hidden = await forward(await head.embed(prompt[p], p), p);
  for (;;) {
    const token = head.sample(await head.logits(hidden));
    out.push(token);
    if (out.length === newTokens) return out;
    const p = prompt.length + out.length - 1;
    hidden = await forward(await head.embed(token, p), p);
  }
}

/** The single-process run that a pipeline of any shape must reproduce token for token. */
export async function referenceGenerate(cfg: ModelConfig, prompt: number[], newTokens: number): Promise<number[]> {
  const dir = await ensureModel(cfg);
  const head = await Head.create(cfg, dir);
  try {
    const runner = await LayerRunner.create(cfg, dir, [...Array(cfg.layers).keys()]);
    try {
      return await generate(head, prompt, newTokens, (hidden) => runner.run(hidden, 1));
    } finally {
      await runner.close();
    }
  } finally {
    await head.close();
  }
}

/** A deterministic prompt of `length` tokens. */
export function makePrompt(cfg: ModelConfig, length: number, seed: number): number[] {
  if (!Number.isInteger(length) || length < 0) throw new Error(`prompt length must be a non-negative integer, got ${length}`);
  const next = mulberry32(streamSeed(seed, 'prompt'));
  return Array.from({ length }, () => Math.floor(next() * cfg.vocab));
}
