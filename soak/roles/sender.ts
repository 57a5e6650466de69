// A many-to-one sender: appends records to every sink at a steady rate, a bounded number in
// flight per sink. Before a sequence number is used it is reserved with the harness (so a put
// that arrives from a process killed a moment later is still known to have been sent), and
// every put's outcome (placed, or refused with a code) is reported.
import { SINK_VADDR, encodeRecord, toRuns } from '../records';
import type { SenderTarget } from '../protocol';
import { codeOf, config, failure, heartbeat, isStopping, memoryEndpoint, onStop, report, sleep, startRole } from './common';

const TICK_MS = 20;
const REPORT_MS = 250;
const RESERVE_AHEAD = 1024;
const RESERVE_STEP = 4096;
/** After a target was unreachable, wait this long before the next put to it (it is being restarted). */
const UNREACHABLE_PAUSE_MS = 250;

interface Stream {
  t: SenderTarget;
  seq: number;
  reserved: number;
  inflight: number;
  tokens: number;
  pausedUntil: number;
  ok: number[];
  failed: [number, string][];
}

const stats: Record<string, number> = { issued: 0, placed: 0, refused: 0, settled: 0 };

async function main(): Promise<void> {
  startRole();
  const s = config.sender!;
  const { endpoint, peers } = await memoryEndpoint('auto');
  heartbeat(() => stats.settled, () => ({ ...stats }));
  await peers;
  const streams: Stream[] = s.targets.map((t) => ({ t, seq: 0, reserved: 0, inflight: 0, tokens: 0, pausedUntil: 0, ok: [], failed: [] }));

  const issue = (st: Stream): void => {
    const seq = ++st.seq;
    if (st.reserved < seq + RESERVE_AHEAD) {
      st.reserved = seq + RESERVE_STEP;
      report({ type: 'reserve', sink: st.t.sink, upTo: st.reserved });
    }
    const record = encodeRecord({ sender: config.index, incarnation: config.incarnation, sink: st.t.sink, seq });
    st.inflight++;
    stats.issued++;
    endpoint.put(st.t.target, SINK_VADDR, record, { append: true, timeout: s.putTimeoutMs, noBufferRetryMs: 1000 }).then(
      () => {
        st.ok.push(seq);
        stats.placed++;
      },
      (error: unknown) => {
        const code = codeOf(error) === undefined ? failure('put', error) : codeOf(error)!;
        st.failed.push([seq, code]);
        stats.refused++;
        stats[`failed.${code}`] = (stats[`failed.${code}`] ?? 0) + 1;
        if (code === 'ERR_RVMA_PEER_LOST' || code === 'ERR_RVMA_NO_PEER') st.pausedUntil = Date.now() + UNREACHABLE_PAUSE_MS;
      },
    ).finally(() => {
      st.inflight--;
      stats.settled++;
    });
  };

  const flush = (): void => {
    for (const st of streams) {
      if (!st.ok.length && !st.failed.length) continue;
      report({ type: 'outcomes', sink: st.t.sink, issued: st.seq, ok: toRuns(st.ok.sort((a, b) => a - b)), failed: st.failed });
      st.ok = [];
      st.failed = [];
    }
  };
  const reporting = setInterval(flush, REPORT_MS);

  let last = Date.now();
  const ticking = setInterval(() => {
    const now = Date.now();
    const dt = (now - last) / 1000;
    last = now;
    if (isStopping()) return;
    for (const st of streams) {
      st.tokens = Math.min(st.tokens + s.ratePerTarget * dt, Math.max(1, s.ratePerTarget / 5));
      if (now < st.pausedUntil) continue;
      while (st.tokens >= 1 && st.inflight < s.window) {
        st.tokens--;
        issue(st);
      }
    }
  }, TICK_MS);

  onStop(async () => {
    clearInterval(ticking);
    // Every put has a timeout: they all settle within it.
    const until = Date.now() + s.putTimeoutMs + 5000;
    while (streams.some((st) => st.inflight > 0) && Date.now() < until) await sleep(20);
    clearInterval(reporting);
    flush();
    for (const st of streams) report({ type: 'outcomes', sink: st.t.sink, issued: st.seq, ok: [], failed: [] });
    await endpoint.close();
  });
}

void main();
