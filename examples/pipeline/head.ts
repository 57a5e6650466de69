// The head rank: embeds each token, runs its own layers, sends the activation round the ring,
// and samples greedily from what the tail sends back. Prefill frames are pipelined (no reply
// but for the last), decode has one token in flight. Mid-generation it re-splits the layers
// (their KV caches move with them); when a rank dies it re-forms the ring from the survivors,
// gives every rank its new range and feeds the conversation again.
import { type Ring, RvmaError } from '../../src';
import { type Head } from './model/runtime';
import { FLAG_NEED_REPLY, FLAG_NO_REPLY, type HeadReport, type PipelineBody, type SplitChange, type WorkerConfig, activationHeader, evenSplit } from './protocol';
import { type Stage } from './stage';

const RECV_TIMEOUT_MS = 30_000;

const isLoss = (e: unknown): boolean => e instanceof RvmaError && e.code === 'ERR_RVMA_PEER_LOST';

/**
 * The split after a re-split: one layer fewer on the head (which also embeds and samples), each
 * boundary moved one layer up, so a layer moves across every link but the last.
 */
export function shiftedSplit(layers: number, ranks: number): { start: number; end: number }[] {
  const even = evenSplit(layers, ranks);
  if (even.slice(0, -1).some((r) => r.end - r.start < 2)) return even; // no rank may end up empty
  return even.map((r, i) => ({ start: i === 0 ? r.start : r.start - 1, end: i === ranks - 1 ? r.end : r.end - 1 }));
}

export async function runHead(stage: Stage, head: Head, config: WorkerConfig, kill: (nodeId: string) => Promise<void>): Promise<HeadReport> {
  const { pipe, cfg } = stage;
  const ring = stage.control?.ring; // undefined on the net.Socket ring: no re-split, no recovery
  const seq = [...config.prompt];
  const generated: number[] = [];
  const splits: SplitChange[] = [{ step: 0, ranges: stage.ranges, why: 'start' }];
  let fed = 0; // positions [0, fed) are in every rank's KV cache
  let recoveryMs: number | undefined;
  const roundTripsUs: number[] = [];

  /** Feeds seq[fed..k] and returns the tail's hidden state for position k. */
  async function feed(k: number): Promise<Float32Array> {
    for (let pos = fed; pos <= k; pos++) {
      const last = pos === k;
      const decoding = pos >= config.prompt.length;
      const out = await stage.run(await head.embed(seq[pos], pos), decoding);
      if (pipe.size === 1) {
        if (last) return out;
        continue;
      }
      const began = performance.now();
      const sent = pipe.sendNext(activationHeader(pos, last ? FLAG_NEED_REPLY : FLAG_NO_REPLY), out);
      if (!last) {
        sent.catch(() => undefined); // a loss shows in the reply's wait
        continue;
      }
      await sent;
      const frame = await pipe.recvPrev({ timeout: RECV_TIMEOUT_MS });
      const hidden = new Float32Array(frame.data.byteLength / 4);
      new Uint8Array(hidden.buffer).set(frame.data);
      frame.release();
      if (decoding) roundTripsUs.push((performance.now() - began) * 1000);
      return hidden;
    }
    throw new Error('feed: nothing to feed');
  }

  async function hiddenAt(k: number): Promise<Float32Array> {
    for (;;) {
      try {
        const hidden = await feed(k);
        fed = k + 1;
        return hidden;
      } catch (error) {
        if (!isLoss(error) || !ring) throw error;
        await recover(ring);
      }
    }
  }

  async function recover(ring: Ring): Promise<void> {
    const began = performance.now();
    await ring.reform({ timeout: 20_000 });
    const ranges = evenSplit(cfg.layers, ring.size);
    await stage.reload(ranges);
    await ring.around({ type: 'CONTROL', body: { kind: 'reload', ranges } satisfies PipelineBody }, { timeout: 20_000 });
    splits.push({ step: generated.length, ranges, why: `recovery: ${ring.size} ranks` });
    fed = 0;
    recoveryMs = performance.now() - began;
  }

  async function resplit(ring: Ring): Promise<void> {
    const ranges = shiftedSplit(cfg.layers, ring.size);
    const move = stage.beginMove(ranges);
    await ring.around({ type: 'RESIZE_CHAIN', ranges }, { timeout: 20_000 });
    await ring.around({ type: 'CONTROL', body: { kind: 'moved' } satisfies PipelineBody }, { timeout: 30_000 });
    await move.installed;
    splits.push({ step: generated.length, ranges, why: 'RESIZE_CHAIN' });
  }

  /** Per-hop latency so far: decode round trips minus every rank's layer compute, per hop. */
  async function hopLatency(ring: Ring): Promise<number> {
    const reports: { totalUs: number; frames: number }[] = [];
    const collecting = (async () => {
      while (reports.length < ring.size - 1) {
        const m = await ring.control({ timeout: 10_000 });
        const body = m.record.type === 'CONTROL' ? (m.record.body as PipelineBody) : undefined;
        if (body?.kind === 'compute') reports.push(body);
      }
    })();
    await ring.around({ type: 'CONTROL', body: { kind: 'report' } satisfies PipelineBody }, { timeout: 10_000 });
    await collecting;
    const trips = roundTripsUs.length;
    // A round trip starts once the head's own layers ran: only the others' compute is in it.
    const compute = reports.reduce((n, r) => n + r.totalUs, 0);
    const total = roundTripsUs.reduce((a, b) => a + b, 0);
    return trips ? (total - compute) / trips / ring.size : 0;
  }

  const prefillBegan = performance.now();
  let hidden = await hiddenAt(seq.length - 1);
  const prefillSeconds = (performance.now() - prefillBegan) / 1000;
  const prefillTokens = config.prompt.length;

  let hopLatencyUs: number | undefined;
  const decodeBegan = performance.now();
  let decodeSkipped = 0; // time spent re-splitting, recovering and measuring: not decode speed
  for (;;) {
    const token = head.sample(await head.logits(hidden));
    generated.push(token);
    seq.push(token);
    if (generated.length === config.newTokens) break;
    const step = generated.length;
    if (ring && (step === config.resplitAt || step === config.killAt)) {
      const began = performance.now();
      if (hopLatencyUs === undefined && ring.size > 1) hopLatencyUs = await hopLatency(ring);
      if (step === config.resplitAt && ring.size > 1) await resplit(ring);
      if (step === config.killAt && ring.size > 2) await kill(ring.members[1]);
      decodeSkipped += performance.now() - began;
    }
    const recoveredBefore = recoveryMs;
    const began = performance.now();
    hidden = await hiddenAt(seq.length - 1);
    if (recoveryMs !== recoveredBefore) decodeSkipped += performance.now() - began;
  }
  const decodeSeconds = (performance.now() - decodeBegan - decodeSkipped) / 1000;
  if (hopLatencyUs === undefined && ring && ring.size > 1) hopLatencyUs = await hopLatency(ring);
  return {
    tokens: generated,
    prefillTokensPerSecond: prefillTokens / prefillSeconds,
    decodeTokensPerSecond: (generated.length - 1) / decodeSeconds,
    hopLatencyUs,
    splits,
    recoveryMs,
  };
}
