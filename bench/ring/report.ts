// The ring's figures (hop median and p99, frames/s, around(), CPU per frame) and its target ratios
// against the net.Socket ring and the C TCP ring of the same run, as tables and JSON.
import { type PlacementMode } from '../common/placement';
import { type Measurement, type Scenario, type Variant } from '../common/protocol';
import { type RatioRow, type Report, type Samples } from '../common/report';
import { fixed, median, table } from '../common/stats';
import { FRAME_BYTES, RANKS, RING_WINDOW, SUBJECTS, TARGETS, WORK_US } from './config';
import { describeRanks, placementName } from './placement';

/** A ring (transport row) at one placement: the variant repeat() measures. */
export interface PlacedVariant extends Variant {
  ring: string;
  placement: PlacementMode;
}

export const placedId = (ring: string, placement: PlacementMode): string => `${ring}@${placement}`;

type Figure = 'hop' | 'hopP99' | 'hopWork' | 'frames' | 'around' | 'cpuHop' | 'cpuFrames' | 'wakeHop' | 'wakeFrames' | 'wakeHopWork';

/** One figure of one measurement: µs per hop, frames/s, µs per around(), CPU µs per frame. */
function figure(f: Figure, s: Scenario, m: Measurement): number {
  switch (f) {
    case 'hop':
    case 'hopWork':
    case 'around':
      return m.medianOpNs! / 1000;
    case 'hopP99':
      return m.p99OpNs! / 1000;
    case 'frames':
      return (m.ops / m.elapsedNs) * 1e9;
    case 'cpuHop':
    case 'cpuFrames':
      // every rank's CPU time (rank 0 + the forwarders) over the frames rank 0 sent
      return m.senderCpuNs === undefined || m.receiverCpuNs === undefined ? NaN : (m.senderCpuNs + m.receiverCpuNs) / (s.warmup + s.count) / 1000;
    case 'wakeHop':
    case 'wakeFrames':
    case 'wakeHopWork':
      // every rank's sleeps (voluntary context switches, all threads) per frame and rank
      return m.senderWakeups === undefined || m.receiverWakeups === undefined ? NaN : (m.senderWakeups + m.receiverWakeups) / (s.warmup + s.count) / RANKS;
  }
}

const SCENARIO_OF: Record<Figure, string> = {
  hop: 'hop',
  hopP99: 'hop',
  hopWork: 'hop-work',
  frames: 'frames',
  around: 'around',
  cpuHop: 'hop',
  cpuFrames: 'frames',
  wakeHop: 'hop',
  wakeFrames: 'frames',
  wakeHopWork: 'hop-work',
};

/** The columns beside a judged ratio: the same ring under thread progress, and busy polling. */
const OTHER_COLUMNS = ['thread', 'busy'] as const;

export interface RingRatio extends RatioRow {
  name: string;
  placement: PlacementMode;
}

export interface RingReport extends Report {
  ratios: RingRatio[];
}

/** The figure of every repetition of one variant that measured it. */
function valuesOf(scenarios: Scenario[], samples: Samples): (id: string, f: Figure) => number[] {
  return (id, f) => {
    const s = scenarios.find((x) => x.id === SCENARIO_OF[f]);
    return s ? (samples[id]?.[s.id] ?? []).map((m) => figure(f, s, m)).filter(Number.isFinite) : [];
  };
}

export function buildRingReport(scenarios: Scenario[], variants: PlacedVariant[], samples: Samples): RingReport {
  const values = valuesOf(scenarios, samples);
  const medians: Report['medians'] = {};
  for (const v of variants) {
    medians[v.id] = {};
    for (const f of Object.keys(SCENARIO_OF) as Figure[]) {
      const xs = values(v.id, f);
      if (xs.length) medians[v.id][f] = median(xs);
    }
  }
  const at = (id: string, f: Figure): number => medians[id]?.[f] ?? NaN;
  const ratios: RingRatio[] = [];
  const placements = [...new Set(variants.map((v) => v.placement))];
  const add = (row: Omit<RingRatio, 'met' | 'target'>, bound: { min?: number; max?: number }): void => {
    const target = bound.min !== undefined ? `>= ${bound.min.toFixed(2)}` : `<= ${bound.max!.toFixed(2)}`;
    const met = Number.isFinite(row.value) ? (bound.min !== undefined ? row.value >= bound.min : row.value <= bound.max!) : undefined;
    ratios.push({ ...row, target, ...(met === undefined ? {} : { met }) });
  };
  for (const p of placements) {
    const net = placedId('net', p);
    const cRing = placedId('c-tcp', p);
    for (const { id: ring, others } of SUBJECTS) {
      const of = placedId(ring, p);
      if (!variants.some((v) => v.id === of)) continue;
      const label = ring.replace(/^rvma-/, 'rvma ');
      const both = (value: (id: string) => number): { value: number; extra: Record<string, number> } => ({
        value: value(of),
        extra: Object.fromEntries(OTHER_COLUMNS.map((c) => [c, others[c] ? value(placedId(others[c], p)) : NaN])),
      });
      const t = TARGETS.byRing[ring];
      add({ name: `${label} / net.Socket ring, hop time`, placement: p, of, versus: net, scenario: 'hop', ...both((id) => at(id, 'hop') / at(net, 'hop')) }, { max: t.hopVersusNet });
      add({ name: `${label} / C TCP ring, hop time`, placement: p, of, versus: cRing, scenario: 'hop', ...both((id) => at(id, 'hop') / at(cRing, 'hop')) }, { max: t.hopVersusCRing });
      add({ name: `${label} / net.Socket ring, frames/s`, placement: p, of, versus: net, scenario: 'frames', ...both((id) => at(id, 'frames') / at(net, 'frames')) }, { min: t.framesVersusNet });
      add({ name: `${label} around() / its hop time`, placement: p, of, versus: of, scenario: 'around', ...both((id) => at(id, 'around') / at(id, 'hop')) }, { max: TARGETS.aroundInHops });
      add({ name: `${label} / net.Socket ring, CPU per frame (stop and wait)`, placement: p, of, versus: net, scenario: 'cpuHop', ...both((id) => at(id, 'cpuHop') / at(net, 'cpuHop')) }, { max: TARGETS.cpuVersusNet });
      add({ name: `${label} / net.Socket ring, CPU per frame (pipelined)`, placement: p, of, versus: net, scenario: 'cpuFrames', ...both((id) => at(id, 'cpuFrames') / at(net, 'cpuFrames')) }, { max: TARGETS.cpuVersusNet });
    }
  }
  return { medians, ratios };
}

/** median [min..max] over the repetitions, with n= when some failed. */
function spread(xs: number[], digits: number, reps: number): string {
  if (!xs.length) return '-';
  const n = xs.length < reps ? ` n=${xs.length}` : '';
  return `${fixed(median(xs), digits)} [${fixed(Math.min(...xs), digits)}..${fixed(Math.max(...xs), digits)}]${n}`;
}

export function formatRingReport(scenarios: Scenario[], variants: PlacedVariant[], samples: Samples, report: RingReport, reps: number): string {
  const values = valuesOf(scenarios, samples);
  const m = (id: string, f: Figure, digits: number): string => fixed(report.medians[id]?.[f] ?? NaN, digits);
  const head = ['ring', 'hop µs', 'hop p99 µs', 'hop after work µs', 'frames/s', 'around() µs', 'around/hop', 'CPU µs/frame (hop; frames)', 'wake-ups/frame/rank (hop; frames; after work)'];
  const out: string[] = [`Medians of ${reps} repetitions [min..max], ${RANKS} ranks, frames of ${FRAME_BYTES} B (8-byte header + ${FRAME_BYTES - 8} B data).`];
  const placements = [...new Set(variants.map((v) => v.placement))];
  for (const p of placements) {
    const rows = variants
      .filter((v) => v.placement === p)
      .map((v) => [
        v.label,
        spread(values(v.id, 'hop'), 1, reps),
        m(v.id, 'hopP99', 1),
        m(v.id, 'hopWork', 1),
        spread(values(v.id, 'frames'), 0, reps),
        m(v.id, 'around', 1),
        fixed((report.medians[v.id]?.around ?? NaN) / (report.medians[v.id]?.hop ?? NaN), 2),
        `${m(v.id, 'cpuHop', 1)}; ${m(v.id, 'cpuFrames', 1)}`,
        `${m(v.id, 'wakeHop', 2)}; ${m(v.id, 'wakeFrames', 2)}; ${m(v.id, 'wakeHopWork', 2)}`,
      ]);
    out.push('', `Placement ${describeRanks(p, RANKS)}`, table([head, ...rows]));
  }
  out.push(
    '',
    `hop: stop and wait (decode), one frame around the ring at a time; a round trip / ${RANKS}, median and p99 of the per-frame times.`,
    `hop after work: the same, each rank busy ${WORK_US} µs on each frame before passing it on (a layer computing; the others sleep meanwhile), the forwarders' work taken out: a round trip less ${RANKS - 1} x ${WORK_US} µs, / ${RANKS}.`,
    `frames/s: pipelined (prefill), frames back at rank 0 per second, at most ${RING_WINDOW} frames in flight around every ring ` +
      `(rvma on Ring.join's default slots: its sends beyond the credits wait in sendNext).`,
    'net.Socket ring: rank 0 writes length + header and the payload in cork()/uncork() (one writev); forwarders write the received bytes in one write.',
    'C TCP ring: bench/c/ringbench.c, one process per rank, TCP_NODELAY, header and payload in one writev, blocking reads ' +
      '(pipelined, rank 0 sends from a second thread), started afresh for each measurement at the same placement.',
    'around(): ring.around() of a RESIZE_CHAIN of 3 ranges; ranks 1 and 2 take it with ring.control() and pass() it on.',
    `CPU: user + system time of all ${RANKS} ranks (all threads) over warm-up and timed frames, per frame.`,
    `wake-ups: voluntary context switches (getrusage, all threads: each a sleep and a wake-up) of all ${RANKS} ranks over the same frames, per frame and rank.`,
    '',
    'Targets (ratios of medians; the loop column, the defaults, is judged; thread progress and busy polling, which keeps a CPU busy while waiting, are for information):',
  );
  const rows = report.ratios.map((r) => [
    r.name,
    placementName(r.placement),
    ratioText(r.value, r.target),
    ...OTHER_COLUMNS.map((c) => ratioText(r.extra[c], r.target)),
    r.target ?? '-',
    r.met === undefined ? '-' : r.met ? 'pass' : 'MISS',
  ]);
  out.push(table([['ratio', 'placement', 'loop', 'thread', 'busy poll', 'target', 'met'], ...rows]), '', verdict(report));
  return out.join('\n');
}

/** Two decimals, three where two would read as the bound itself (4.002 is not 4.00). */
function ratioText(value: number, target: string | undefined): string {
  const text = fixed(value, 2);
  return target !== undefined && text === target.slice(3) && Number(text) !== value ? fixed(value, 3) : text;
}

/** One line: whether every target was met, and which were not. */
export function verdict(report: RingReport): string {
  const judged = report.ratios.filter((r) => r.met !== undefined);
  const unmeasured = report.ratios.length - judged.length;
  const gaps = unmeasured ? `; ${unmeasured} not measured` : '';
  const missed = judged.filter((r) => !r.met);
  if (!judged.length) return `no target measured${gaps}`;
  if (!missed.length) return `targets met (${judged.length} of ${judged.length}${gaps})`;
  const list = missed.map((r) => `${r.name} (${placementName(r.placement)}) = ${ratioText(r.value, r.target)} (${r.target})`);
  return `targets NOT met (${missed.length} of ${judged.length}${gaps}): ${list.join('; ')}`;
}
