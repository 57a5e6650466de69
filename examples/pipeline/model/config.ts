// Shape of the pipeline example's decoder-only transformer. The config alone determines the
// weights, so every process that holds the same config computes the same model.

export interface ModelConfig {
  layers: number;
  dModel: number;
  heads: number;
  ffnDim: number;
  vocab: number;
  maxSeq: number;
  seed: number;
}

export const DEFAULT_CONFIG: Readonly<ModelConfig> = Object.freeze({
  layers: 8,
  dModel: 256,
  heads: 4,
  ffnDim: 1024,
  vocab: 512,
  maxSeq: 256,
  seed: 0x5eed,
});

/** Small enough that a test builds and runs it in well under a second. */
export const TINY_CONFIG: Readonly<ModelConfig> = Object.freeze({
  layers: 3,
  dModel: 64,
  heads: 2,
  ffnDim: 128,
  vocab: 64,
  maxSeq: 32,
  seed: 0x7177,
});

export function headDim(cfg: ModelConfig): number {
  return cfg.dModel / cfg.heads;
}

export function validateConfig(cfg: ModelConfig): void {
  for (const key of ['layers', 'dModel', 'heads', 'ffnDim', 'vocab', 'maxSeq'] as const) {
    const v = cfg[key];
    if (!Number.isInteger(v) || v < 1 || v > 1 << 20) throw new Error(`config.${key} must be an integer in 1..2^20, got ${v}`);
  }
  if (!Number.isInteger(cfg.seed) || cfg.seed < 0 || cfg.seed > 0xffffffff) {
    throw new Error(`config.seed must be a uint32, got ${cfg.seed}`);
  }
  if (cfg.dModel % cfg.heads !== 0) throw new Error(`config.dModel (${cfg.dModel}) must be a multiple of heads (${cfg.heads})`);
}
