// Measures the model's cost on this machine: time per token per layer at the default config,
// early and late in the sequence (attention grows with the KV cache), and the head's share.
// Run after `npm run build`: node dist/examples/pipeline/layer-time.js
import { performance } from 'node:perf_hooks';
import { ensureModel } from './model/build';
import { DEFAULT_CONFIG } from './model/config';
import { Head, LayerRunner, makePrompt } from './model/runtime';

async function main(): Promise<void> {
  const cfg = DEFAULT_CONFIG;
  let t0 = performance.now();
  const dir = await ensureModel(cfg);
  console.log(`model at ${dir} (ensureModel ${(performance.now() - t0).toFixed(0)} ms)`);

  const head = await Head.create(cfg, dir);
  const runner = await LayerRunner.create(cfg, dir, [...Array(cfg.layers).keys()]);
  const tokens = makePrompt(cfg, cfg.maxSeq, 7);
  const perToken: number[] = [];
  let embedMs = 0;
  let logitsMs = 0;
  for (let p = 0; p < tokens.length; p++) {
    t0 = performance.now();
    const hidden = await head.embed(tokens[p], p);
    const t1 = performance.now();
    const out = await runner.run(hidden, 1);
    const t2 = performance.now();
    head.sample(await head.logits(out));
    logitsMs += performance.now() - t2;
    embedMs += t1 - t0;
    perToken.push(t2 - t1);
  }
  const perLayer = (from: number, to: number) => {
    const slice = perToken.slice(from, to).sort((a, b) => a - b);
    return (slice[Math.floor(slice.length / 2)] / cfg.layers).toFixed(3);
  };
  const n = tokens.length;
  console.log(`${cfg.layers} layers, d=${cfg.dModel}, ffn=${cfg.ffnDim}, ${n} tokens, one at a time`);
  console.log(`per token per layer (median): positions 8-32 ${perLayer(8, 32)} ms, ${n / 2 - 16}-${n / 2 + 16} ${perLayer(n / 2 - 16, n / 2 + 16)} ms, ${n - 32}-${n} ${perLayer(n - 32, n)} ms`);
  console.log(`per token, all layers (mean): ${(perToken.reduce((a, b) => a + b, 0) / n).toFixed(3)} ms`);
  console.log(`head per token (mean): embed ${(embedMs / n).toFixed(3)} ms, logits ${(logitsMs / n).toFixed(3)} ms`);
  await Promise.all([runner.close(), head.close()]);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
