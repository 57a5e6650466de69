// The tables of bench:rendezvous: per placement, the medians of both transports; the target
// ratios (rendezvous over put at the same placement) with pass/MISS; CPU and page faults per step.
import { type PlacementMode } from '../common/placement';
import { type Measurement, type Scenario } from '../common/protocol';
import { type Report, type ReportSpec, type Samples, valueOf } from '../common/report';
import { sizeLabel } from '../../src/cli/sizes';
import { fixed, median, table } from '../common/stats';
import { type PlacedVariant, TARGETS, placedId } from './config';

const PLACEMENT_NAME: Record<PlacementMode, string> = { same: 'same CPU', split: 'split', none: 'unpinned' };

export function reportSpec(scenarios: Scenario[], variants: PlacedVariant[]): ReportSpec {
  const placements = [...new Set(variants.map((v) => v.placement))];
  const pairs = placements.flatMap((p) => scenarios.map((s) => ({ of: placedId('rendezvous-recycle', p), versus: placedId('put', p), scenario: s.id })));
  return {
    scenarios,
    variants,
    subject: pairs[0]?.of ?? 'rendezvous-recycle',
    subjectColumn: 'rendezvous',
    extra: [],
    ratios: pairs,
    targets: pairs.flatMap((r) => TARGETS.filter((t) => t.scenario === r.scenario).map((t) => ({ ...r, min: t.min, max: t.max }))),
  };
}

/** median [min..max] of the repetitions, n= when some failed. */
function spread(values: number[], digits: number, reps: number): string {
  if (!values.length) return '-';
  const n = values.length < reps ? ` n=${values.length}` : '';
  return `${fixed(median(values), digits)} [${fixed(Math.min(...values), digits)}..${fixed(Math.max(...values), digits)}]${n}`;
}

/** µs per step (warm-up and timed steps) of a CPU time in ns. */
function perStep(ms: Measurement[], s: Scenario, f: (m: Measurement) => number | undefined, digits: number): string {
  const xs = ms.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x));
  return xs.length ? fixed(median(xs) / (s.warmup + s.count) / 1000, digits) : '-';
}

export function formatReport(spec: ReportSpec, samples: Samples, report: Report, reps: number): string {
  const { scenarios } = spec;
  const variants = spec.variants as PlacedVariant[];
  const ms = (v: string, s: Scenario): Measurement[] => samples[v]?.[s.id] ?? [];
  const out: string[] = [`Medians of ${reps} repetitions [min..max]; ping-pong in µs per round trip, the others in MiB/s of tensor bytes.`];
  for (const p of [...new Set(variants.map((v) => v.placement))]) {
    const rows = variants
      .filter((v) => v.placement === p)
      .map((v) => [
        v.label,
        ...scenarios.flatMap((s) => {
          const cell = spread(ms(v.id, s).map((m) => valueOf(s, m)), s.kind === 'rtt' ? 1 : 0, reps);
          return s.kind === 'rtt' ? [cell, fixed(median(ms(v.id, s).map((m) => m.p99OpNs! / 1000)), 1)] : [cell];
        }),
      ]);
    const head = ['transport', ...scenarios.flatMap((s) => (s.kind === 'rtt' ? [`${s.label} µs`, 'p99 µs'] : [`${s.label} MiB/s`]))];
    out.push('', `Placement ${PLACEMENT_NAME[p]}`, table([head, ...rows]));
  }
  out.push(
    '',
    'Targets (rendezvous recycled at cleanup over put at the same placement; ping-pong: time ratio, others: bandwidth ratio; ' +
      'the columns without reuse and with release() are for information):',
  );
  const ratioRows = report.ratios.map((r) => {
    const s = scenarios.find((x) => x.id === r.scenario)!;
    const placement = (spec.variants.find((v) => v.id === r.of) as PlacedVariant).placement;
    const versus = (t: string): number => (report.medians[placedId(t as never, placement)]?.[s.id] ?? NaN) / (report.medians[r.versus]?.[s.id] ?? NaN);
    return [
      s.kind === 'rtt' ? 'round-trip time' : 'bandwidth',
      s.label,
      PLACEMENT_NAME[placement],
      fixed(r.value, 2),
      r.target ?? '-',
      r.met === undefined ? '-' : r.met ? 'pass' : 'MISS',
      fixed(versus('rendezvous'), 2),
      fixed(versus('rendezvous-release'), 2),
    ];
  });
  out.push(table([['ratio', 'scenario', 'placement', 'measured', 'target', 'met', 'no reuse', 'with release()'], ...ratioRows]));
  out.push('', 'Per step, medians over the repetitions: CPU µs (producer + consumer, all threads, warm-up included) | minor page faults (producer + consumer, timed steps):');
  const cpuRows = variants.map((v) => [
    `${v.label}, ${PLACEMENT_NAME[v.placement]}`,
    ...scenarios.map((s) => {
      const cpu = `${perStep(ms(v.id, s), s, (m) => m.senderCpuNs, 1)} + ${perStep(ms(v.id, s), s, (m) => m.receiverCpuNs, 1)}`;
      const f = (k: string): string => fixed(median(ms(v.id, s).map((m) => m.reported?.[k] ?? NaN)), 1);
      return `${cpu} | ${f('producerFaultsPerStep')} + ${f('consumerFaultsPerStep')}`;
    }),
  ]);
  out.push(table([['transport', ...scenarios.map((s) => `${s.label} (${sizeLabel(s.size)} each)`)], ...cpuRows]));
  out.push('', verdict(report, scenarios, spec));
  return out.join('\n');
}

export function verdict(report: Report, scenarios: Scenario[], spec: ReportSpec): string {
  const judged = report.ratios.filter((r) => r.met !== undefined);
  const gaps = report.ratios.length - judged.length;
  const missed = judged.filter((r) => !r.met);
  const tail = gaps ? `; ${gaps} not measured` : '';
  if (!judged.length) return `no target measured${tail}`;
  if (!missed.length) return `targets met (${judged.length} of ${judged.length}${tail})`;
  const name = (r: (typeof missed)[number]): string => {
    const placement = (spec.variants.find((v) => v.id === r.of) as PlacedVariant).placement;
    return `${scenarios.find((s) => s.id === r.scenario)!.label} (${PLACEMENT_NAME[placement]}) = ${fixed(r.value, 2)} (${r.target})`;
  };
  return `targets MISSED (${missed.length} of ${judged.length}${tail}): ${missed.map(name).join('; ')}`;
}
