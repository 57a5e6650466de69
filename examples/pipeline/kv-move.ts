// Moving layers between ranks with their KV caches when the split changes (RESIZE_CHAIN), so
// generation goes on where it was: each rank sends the caches of the layers it gives up
// straight to their new owners' KV mailboxes, and installs the ones it takes over.
import { type Endpoint, type LayerRange, type Mailbox } from '../../src';
import { type ModelConfig, headDim } from './model/config';
import { KV_HEADER_BYTES, type KvState, decodeKv, encodeKv, kvElements } from './model/kv';
import { type LayerRunner } from './model/runtime';

/** Where every worker receives moved KV caches (the application's vaddr range). */
export const KV_VADDR = 0x20000n;

export function openKvMailbox(endpoint: Endpoint, cfg: ModelConfig): Mailbox {
  return endpoint.openMailbox(KV_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: cfg.layers });
}

const ownerOf = (ranges: LayerRange[], layer: number): number => ranges.findIndex((r) => layer >= r.start && layer < r.end);

export interface Move {
  /** Layers this rank gave up, and those it takes over. */
  sent: number[];
  taking: number[];
  /** Settles once the layers taken over run here with their caches. */
  installed: Promise<void>;
}

/**
 * Starts this rank's part of a re-split: buffers for the caches coming in are posted first,
 * the caches going out are sent at once (a put waits, retrying, until their new owner posted).
 */
export function startMove(
  cfg: ModelConfig,
  endpoint: Endpoint,
  mailbox: Mailbox,
  runner: LayerRunner,
  members: string[],
  rank: number,
  from: LayerRange[],
  to: LayerRange[],
): Move {
  const mine = (r: LayerRange): Set<number> => new Set(Array.from({ length: r.end - r.start }, (_, i) => r.start + i));
  const before = mine(from[rank]);
  const after = mine(to[rank]);
  const sent = [...before].filter((l) => !after.has(l));
  const taking = [...after].filter((l) => !before.has(l));
  const maxBytes = KV_HEADER_BYTES + 2 * 4 * kvElements(cfg.heads, cfg.maxSeq, headDim(cfg));
  for (let i = 0; i < taking.length; i++) mailbox.post(maxBytes);
  const outgoing = sent.length ? runner.removeLayers(sent) : new Map<number, KvState>();
  const puts = [...outgoing.values()].map((kv) =>
    endpoint.put(members[ownerOf(to, kv.layer)], KV_VADDR, encodeKv(kv), { timeout: 30_000, noBufferRetryMs: 30_000 }),
  );
  const installed = (async () => {
    const caches = new Map<number, KvState>();
    for (let i = 0; i < taking.length; i++) {
      const c = await mailbox.next({ timeout: 30_000 });
      const kv = decodeKv(c.buffer.subarray(0, c.bytes));
      if (!taking.includes(kv.layer) || caches.has(kv.layer)) throw new Error(`unexpected KV cache of layer ${kv.layer}`);
      caches.set(kv.layer, kv);
    }
    if (taking.length) await runner.addLayers(taking, caches);
    await Promise.all(puts);
  })();
  return { sent, taking, installed };
}
