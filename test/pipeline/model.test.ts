/**
 * The pipeline example's model half: layers split across runners, and layers moved between
 * runners with their KV caches, must give exactly the tokens of the single-process reference.
 *
 * @jest-environment ./test/pipeline/ort-environment.js
 */
import { ensureModel } from '../../examples/pipeline/model/build';
import { TINY_CONFIG } from '../../examples/pipeline/model/config';
import { KV_HEADER_BYTES } from '../../examples/pipeline/model/kv';
import {
  type Forward,
  Head,
  type KvState,
  LayerRunner,
  decodeKv,
  encodeKv,
  generate,
  makePrompt,
  referenceGenerate,
} from '../../examples/pipeline/model/runtime';

const cfg = TINY_CONFIG;
const PROMPT = makePrompt(cfg, 6, 1);
const NEW_TOKENS = 12;
const TIMEOUT = 60_000;

/** What a transport does to a hidden state: bytes out, a fresh array in. */
function overTheWire(x: Float32Array): Float32Array {
  return new Float32Array(Buffer.from(x.buffer, x.byteOffset, x.byteLength).buffer.slice(0));
}

/** Runs every runner in layer order; a runner with no layers passes the state through. */
async function forwardAll(runners: LayerRunner[], hidden: Float32Array): Promise<Float32Array> {
  const ordered = [...runners].sort((a, b) => (a.layers[0] ?? Infinity) - (b.layers[0] ?? Infinity));
  let x = hidden;
  for (const r of ordered) x = overTheWire(await r.run(x, 1));
  return x;
}

/** Wraps a forward pass to keep a copy of every hidden state it returns. */
function recording(forward: Forward, states: Buffer[]): Forward {
  return async (h, position) => {
    const out = await forward(h, position);
    states.push(Buffer.from(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength)));
    return out;
  };
}

function move(from: LayerRunner, to: LayerRunner, layers: number[]): Promise<void> {
  const removed = from.removeLayers(layers);
  const wire = new Map<number, KvState>();
  for (const [layer, kv] of removed) wire.set(layer, decodeKv(encodeKv(kv)));
  return to.addLayers(layers, wire);
}

let dir: string;
let reference: number[];
// Tokens alone are a weak check on a tiny random model: a slightly wrong cache often still
// picks the same argmax. The tail's hidden state at every position must match bit for bit too.
const referenceStates: Buffer[] = [];
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  dir = await ensureModel(cfg);
  reference = await referenceGenerate(cfg, PROMPT, NEW_TOKENS);
  const head = await Head.create(cfg, dir);
  const all = await LayerRunner.create(cfg, dir, [...Array(cfg.layers).keys()]);
  const tokens = await generate(head, PROMPT, NEW_TOKENS, recording((h) => all.run(h, 1), referenceStates));
  await Promise.all([head.close(), all.close()]);
  expect(tokens).toEqual(reference);
}, TIMEOUT);

afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function track<T extends { close(): Promise<void> }>(p: Promise<T>): Promise<T> {
  const o = await p;
  open.push(o);
  return o;
}

test(
  'reference generation is repeatable and not degenerate',
  async () => {
    const again = await referenceGenerate(cfg, PROMPT, NEW_TOKENS);
    expect(again).toEqual(reference);
    expect(reference).toHaveLength(NEW_TOKENS);
    expect(new Set(reference).size).toBeGreaterThanOrEqual(2);
    for (const t of reference) expect(t >= 0 && t < cfg.vocab).toBe(true);
  },
  TIMEOUT,
);

test(
  'layers split across two runners give the reference tokens',
  async () => {
    const head = await track(Head.create(cfg, dir));
    const a = await track(LayerRunner.create(cfg, dir, [0]));
    const b = await track(LayerRunner.create(cfg, dir, [1, 2]));
    const states: Buffer[] = [];
    const tokens = await generate(head, PROMPT, NEW_TOKENS, recording((h) => forwardAll([a, b], h), states));
    expect(tokens).toEqual(reference);
    expect(states).toEqual(referenceStates);
    expect(a.position).toBe(PROMPT.length + NEW_TOKENS - 1);
    expect(b.position).toBe(a.position);
  },
  TIMEOUT,
);

test(
  'moving layers with their KV cache mid-generation keeps the reference tokens',
  async () => {
    const head = await track(Head.create(cfg, dir));
    const a = await track(LayerRunner.create(cfg, dir, [0]));
    const b = await track(LayerRunner.create(cfg, dir, [1, 2]));
    // Before the run at each position: mid-prompt, then twice while decoding, ending with the
    // first rank empty and then taking the last layer back at a later position.
    const moves = new Map<number, () => Promise<void>>([
      [3, () => move(b, a, [1])],
      [8, () => move(a, b, [0, 1])],
      [12, () => move(b, a, [2])],
    ]);
    const states: Buffer[] = [];
    const forward: Forward = async (h, position) => {
      await moves.get(position)?.();
      return forwardAll([a, b], h);
    };
    const tokens = await generate(head, PROMPT, NEW_TOKENS, recording(forward, states));
    expect(tokens).toEqual(reference);
    expect(states).toEqual(referenceStates);
    expect(a.layers).toEqual([2]);
    expect(b.layers).toEqual([0, 1]);
  },
  TIMEOUT,
);

test(
  'addLayers refuses a cache that does not fit the runner',
  async () => {
    const a = await track(LayerRunner.create(cfg, dir, [0, 1]));
    const b = await track(LayerRunner.create(cfg, dir, [2]));
    const h = new Float32Array(cfg.dModel).fill(0.5);
    await forwardAll([a, b], h);
    await forwardAll([a, b], h);
    const kv = a.removeLayers([1]).get(1)!;
    const short = { ...kv, length: 1, k: kv.k.subarray(0, kv.k.length / 2), v: kv.v.subarray(0, kv.v.length / 2) };
    await expect(b.addLayers([1], new Map([[1, short]]))).rejects.toThrow(/length 1, runner is at 2/);
    await expect(b.addLayers([1], new Map([[1, { ...kv, layer: 0 }]]))).rejects.toThrow(/layer 0 given as layer 1/);
    await expect(b.addLayers([1])).rejects.toThrow(/needs its KV cache/);
    await expect(b.addLayers([2], new Map([[2, kv]]))).rejects.toThrow(/already here/);
    expect(b.layers).toEqual([2]);
    await b.addLayers([1], new Map([[1, kv]]));
    expect(b.layers).toEqual([1, 2]);
  },
  TIMEOUT,
);

describe('decodeKv', () => {
  const heads = 2;
  const headDim = 3;
  const length = 4;
  const n = heads * length * headDim;
  const state: KvState = {
    layer: 5,
    length,
    heads,
    headDim,
    k: Float32Array.from({ length: n }, (_, i) => i / 7),
    v: Float32Array.from({ length: n }, (_, i) => -i / 3),
  };
  const good = encodeKv(state);

  /** The good message with header fields (byte offset -> u32) overwritten. */
  function withFields(fields: Record<number, number>): Uint8Array {
    const copy = good.slice();
    for (const [offset, value] of Object.entries(fields)) new DataView(copy.buffer).setUint32(Number(offset), value, true);
    return copy;
  }
  const withField = (offset: number, value: number) => withFields({ [offset]: value });

  test('round-trips, also from an unaligned view', () => {
    expect(decodeKv(good)).toEqual(state);
    const padded = new Uint8Array(good.length + 3);
    padded.set(good, 3);
    expect(decodeKv(padded.subarray(3))).toEqual(state);
  });

  test('an empty cache round-trips', () => {
    const empty: KvState = { layer: 0, length: 0, heads, headDim, k: new Float32Array(0), v: new Float32Array(0) };
    expect(decodeKv(encodeKv(empty))).toEqual(empty);
  });

  test.each<[string, () => Uint8Array, RegExp]>([
    ['no bytes', () => new Uint8Array(0), /shorter than/],
    ['a cut header', () => good.subarray(0, KV_HEADER_BYTES - 1), /shorter than/],
    ['a cut payload', () => good.subarray(0, good.length - 1), /declares/],
    ['only the header', () => good.subarray(0, KV_HEADER_BYTES), /declares/],
    ['trailing bytes', () => Uint8Array.from([...good, 0, 0, 0, 0]), /declares/],
    ['a bad magic number', () => withField(0, 0x12345678), /magic/],
    ['length one too large', () => withField(8, length + 1), /declares/],
    ['length one too small', () => withField(8, length - 1), /declares/],
    ['zero heads', () => withField(12, 0), /heads 0 out of range/],
    ['zero headDim', () => withField(16, 0), /headDim 0 out of range/],
    ['heads swapped with headDim sizes', () => withField(12, heads + 1), /declares/],
    ['a huge declared length', () => withField(8, 1 << 20), /declares/],
    ['a length past the field limit', () => withField(8, 0xffffffff), /length .* out of range/],
    ['a huge declared headDim', () => withField(16, 1 << 20), /declares/],
    ['sizes whose product passes 2^53', () => withFields({ 8: 1 << 20, 12: 1 << 20, 16: 1 << 20 }), /declares/],
    ['a layer past the field limit', () => withField(4, 0xffffffff), /layer .* out of range/],
  ])('rejects %s', (_name, bytes, message) => {
    expect(() => decodeKv(bytes())).toThrow(message);
  });

  test('rejects what is not a Uint8Array', () => {
    expect(() => decodeKv([1, 2, 3] as never)).toThrow(/Uint8Array/);
  });
});
