// npm run bench:shm [-- --reps N] [--placement same|split|none] [--variants a,b] [--scenarios x,y]:
// shm mailbox puts and raw writes against tcp loopback, memcpy and UCX's ucx_perftest, repeated
// and interleaved, then the table of medians and ratios, saved to bench/results/shm-<date>.json.
import * as path from 'node:path';
import { chosen, reportOf } from '../common/knobs';
import { compileC, removeCompiled } from '../common/compile';
import { buffersFor } from '../common/endpoint-receiver';
import { conclude, startClock } from '../common/conclude';
import { PairSet } from '../common/pair-set';
import { describePlacement, placementMode, placementOf } from '../common/placement';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { repeat } from '../common/repeat';
import { median } from '../common/stats';
import { ensureUcx } from '../common/ucx-install';
import { REPETITIONS, REPORT, SCENARIOS, VARIANTS } from './config';
import { runMemcpy } from './memcpy';
import { runUcx, UCX_TLS } from './ucx';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'child.js');

async function main(): Promise<void> {
  const { reps, scenarios, variants: asked } = chosen(REPETITIONS, SCENARIOS, VARIANTS);
  const mode = placementMode();
  const placement = placementOf(mode);
  const memcpy = asked.some((v) => v.transport === 'memcpy') ? compileC(ROOT, 'memcpybench') : undefined;
  if (memcpy instanceof Error) console.log(`memcpy skipped: ${memcpy.message}`);
  const ucx = asked.some((v) => v.transport === 'ucx') ? ensureUcx() : undefined;
  if (ucx instanceof Error) console.log(`UCX skipped: ${ucx.message}`);
  const missing = (v: Variant): boolean =>
    (v.transport === 'memcpy' && memcpy instanceof Error) || (v.transport === 'ucx' && ucx instanceof Error);
  const variants = asked.filter((v) => !missing(v));
  console.log(`placement: ${describePlacement(mode)}`);
  const clock = startClock();

  const pairs = new PairSet(CHILD);
  try {
    for (const v of variants) if (v.transport === 'mailbox' || v.transport === 'raw') await pairs.start(v);
    const measure = (v: Variant, s: Scenario): Promise<Measurement> => {
      if (v.transport === 'memcpy') return runMemcpy(memcpy as string, s, placement, v.source, v.rotate ? mailboxBuffers(s) : undefined);
      if (v.transport === 'ucx') return runUcx(v, s, placement);
      return pairs.measure(v, s, placement);
    };
    const measured = await repeat(reps, scenarios, variants, measure);
    const skipped = [memcpy, ucx].filter((e) => e instanceof Error).map((e) => (e as Error).message);
    const ucxRecord = typeof ucx === 'string' ? { version: ucx, UCX_TLS } : undefined;
    const config = { placement: describePlacement(mode), scenarios, variants, ucx: ucxRecord, skipped };
    const notes = [`placement: ${describePlacement(mode)}.`, ...REPORT.notes!, memcpyNote(measured.samples.memcpy)];
    const spec = { ...reportOf(REPORT, scenarios), variants, notes };
    conclude({ root: ROOT, bench: 'shm', spec, reps, ...clock, ...measured, config });
  } finally {
    await pairs.stop();
    if (memcpy) removeCompiled(memcpy);
  }
}

/** The working set of a mailbox row: its window of sources, the buffers its receiver posts. */
function mailboxBuffers(s: Scenario): { sources: number; destinations: number } {
  return { sources: s.window, destinations: buffersFor(s.size, 1, s.window, { provider: 'shm', progress: 'loop' }) };
}

/** memcpy's own figure per size, in GB/s (10^9 bytes), as memcpybench reports it. */
function memcpyNote(samples: Record<string, Measurement[]> | undefined): string {
  const sizes = SCENARIOS.filter((s) => samples?.[s.id]?.length).map(
    (s) => `${s.label} ${median(samples![s.id].map((m) => m.reported!.gbPerSecond)).toFixed(1)}`,
  );
  return `memcpy, GB/s (1e9 B/s, medians): ${sizes.length ? sizes.join(', ') : 'not measured'}.`;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
