// The memcpy row: bench/c/memcpybench.c, one process per measurement on the receiver's CPU,
// copying the scenario's bytes (warm-up and timed copies as many as the puts).
import { type Placement, pinned } from '../common/placement';
import { runProgram } from '../common/process';
import { type Measurement, type Scenario } from '../common/protocol';

const TIMEOUT_MS = 30_000;

/**
 * source 'native': the source is allocated like allocBuffer's memory (huge pages from 2 MiB).
 * buffers: copy from that many sources into that many destinations in turn (else one each).
 */
export async function runMemcpy(
  bin: string,
  s: Scenario,
  placement: Placement | undefined,
  source = 'buffer',
  buffers?: { sources: number; destinations: number },
): Promise<Measurement> {
  const rotation = buffers ? [buffers.sources, buffers.destinations] : [];
  const args = [s.size, s.count, s.warmup, source === 'native' ? 'huge' : 'malloc', ...rotation].map(String);
  const out = await runProgram(...pinned(placement?.receiver, bin, args), { timeoutMs: TIMEOUT_MS }).output;
  const m = JSON.parse(out.trim()) as { ops: number; bytes: number; elapsedNs: number; gbPerSecond: number };
  if (m.ops !== s.count || m.bytes !== s.count * s.size) throw new Error(`memcpybench copied ${m.ops} x, asked for ${s.count}`);
  return { ops: m.ops, bytes: m.bytes, elapsedNs: m.elapsedNs, reported: { gbPerSecond: m.gbPerSecond } };
}
