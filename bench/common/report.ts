// Turns the samples into medians, ratios and target checks, as printed tables and as JSON.
// What a benchmark shows (rows, ratios, targets) comes in its ReportSpec.
import { type Measurement, type Scenario, type Variant } from './protocol';
import { fixed, median, mibPerSecond, table } from './stats';

/** samples[variant][scenario]: one measurement per repetition that succeeded. */
export type Samples = Record<string, Record<string, Measurement[]>>;

export interface TargetSpec {
  /** Ratio of medians: the subject (or `of`) over this variant. */
  versus: string;
  /** Another variant than the subject on the left of the ratio. */
  of?: string;
  scenario: string;
  /** bandwidth ratios must reach min; round-trip time ratios must stay at or below max */
  min?: number;
  max?: number;
}

export interface ReportSpec {
  scenarios: Scenario[];
  variants: Variant[];
  /** The variant every ratio is taken of; targets are judged on it. */
  subject: string;
  /** Its column heading in the ratio table. */
  subjectColumn: string;
  /** More variants whose same ratios are shown in extra columns, for information. */
  extra: { id: string; column: string }[];
  /** Ratio rows: the subject (or `of`) over `versus` at `scenario`. */
  ratios: { versus: string; scenario: string; of?: string }[];
  targets: TargetSpec[];
  /** How a variant id reads in a ratio's name (default: the id). */
  names?: Record<string, string>;
  /** Lines printed under the table of medians (how to read a row). */
  notes?: string[];
}

export interface RatioRow {
  versus: string;
  scenario: string;
  /** the variant over `versus`, when not the subject */
  of?: string;
  /** subject (or `of`) over `versus`, from medians: bandwidth ratio, or time ratio for rtt */
  value: number;
  target?: string;
  met?: boolean;
  /** the same ratio for the extra variants */
  extra: Record<string, number>;
}

export interface Report {
  /** Medians: µs per round trip (rtt) or MiB/s (bw). */
  medians: Record<string, Record<string, number>>;
  ratios: RatioRow[];
}

/** µs per round trip (rtt) or MiB/s (bw) of one measurement. */
export function valueOf(s: Scenario, m: Measurement): number {
  return s.kind === 'rtt' ? m.medianOpNs! / 1000 : mibPerSecond(m.bytes, m.elapsedNs);
}

export function buildReport(spec: ReportSpec, samples: Samples): Report {
  const medians: Report['medians'] = {};
  for (const v of spec.variants) {
    medians[v.id] = {};
    for (const s of spec.scenarios) {
      const values = (samples[v.id]?.[s.id] ?? []).map((m) => valueOf(s, m));
      if (values.length) medians[v.id][s.id] = median(values);
    }
  }
  const ratio = (of: string, versus: string, scenario: string): number =>
    (medians[of]?.[scenario] ?? NaN) / (medians[versus]?.[scenario] ?? NaN);
  const ratios = spec.ratios.map(({ versus, scenario, of }): RatioRow => {
    const value = ratio(of ?? spec.subject, versus, scenario);
    const target = spec.targets.find((t) => t.versus === versus && t.scenario === scenario && t.of === of);
    const extra: Record<string, number> = {};
    for (const e of spec.extra) extra[e.id] = ratio(e.id, versus, scenario);
    const row: RatioRow = { versus, scenario, value, extra };
    if (of !== undefined) row.of = of;
    if (target) {
      row.target = target.min !== undefined ? `>= ${target.min.toFixed(2)}` : `<= ${target.max!.toFixed(2)}`;
      // Judged only where both sides were measured (filters, or failed measurements, leave gaps).
      if (Number.isFinite(value)) row.met = target.min !== undefined ? value >= target.min : value <= target.max!;
    }
    return row;
  });
  return { medians, ratios };
}

function ratioName(spec: ReportSpec, r: RatioRow): string {
  const name = (id: string): string => spec.names?.[id] ?? id;
  const kind = spec.scenarios.find((s) => s.id === r.scenario)?.kind;
  return `${name(r.of ?? spec.subject)}/${name(r.versus)}${kind === 'rtt' ? ' (time)' : ''}`;
}

function scenarioLabel(spec: ReportSpec, id: string): string {
  return spec.scenarios.find((s) => s.id === id)?.label ?? id;
}

/** One line: whether every target was met, and which were not. */
export function verdict(spec: ReportSpec, report: Report): string {
  const judged = report.ratios.filter((r) => r.met !== undefined);
  const unmeasured = report.ratios.filter((r) => r.target !== undefined && r.met === undefined).length;
  const gaps = unmeasured ? `; ${unmeasured} not measured` : '';
  const missed = judged.filter((r) => !r.met);
  if (!judged.length) return `no target measured${gaps}`;
  if (!missed.length) return `target met (${judged.length} of ${judged.length} ratios${gaps})`;
  const list = missed.map((r) => `${ratioName(spec, r)} at ${scenarioLabel(spec, r.scenario)} = ${fixed(r.value, 2)} (${r.target})`);
  return `target NOT met (${missed.length} of ${judged.length} ratios${gaps}): ${list.join('; ')}`;
}

export function formatReport(spec: ReportSpec, samples: Samples, report: Report, reps: number): string {
  const head = ['variant', ...spec.scenarios.map((s) => `${s.label} ${s.kind === 'rtt' ? '(µs)' : '(MiB/s)'}`)];
  const rows = spec.variants.map((v) => [
    v.label,
    ...spec.scenarios.map((s) => {
      const values = (samples[v.id]?.[s.id] ?? []).map((m) => valueOf(s, m));
      if (!values.length) return '-';
      const digits = s.kind === 'rtt' ? 1 : 0;
      const lo = fixed(Math.min(...values), digits);
      const hi = fixed(Math.max(...values), digits);
      const n = values.length < reps ? ` n=${values.length}` : '';
      return `${fixed(report.medians[v.id][s.id], digits)} [${lo}..${hi}]${n}`;
    }),
  ]);
  const ratioRows = report.ratios.map((r) => [
    ratioName(spec, r),
    scenarioLabel(spec, r.scenario),
    fixed(r.value, 2),
    r.target ?? '-',
    r.met === undefined ? '-' : r.met ? 'yes' : 'NO',
    ...spec.extra.map((e) => fixed(r.extra[e.id], 2)),
  ]);
  // Rows measured by external programs have no CPU times; they are left out.
  const withCpu = (v: Variant, s: Scenario): Measurement[] =>
    (samples[v.id]?.[s.id] ?? []).filter((m) => m.senderCpuNs !== undefined && m.receiverCpuNs !== undefined);
  const cpuRows = spec.variants
    .filter((v) => spec.scenarios.some((s) => withCpu(v, s).length))
    .map((v) => [
      v.label,
      ...spec.scenarios.map((s) => {
        const ms = withCpu(v, s);
        if (!ms.length) return '-';
        const perOp = (ns: (m: Measurement) => number): string => fixed(median(ms.map((m) => ns(m) / (s.warmup + s.count))) / 1000, 1);
        return `${perOp((m) => m.senderCpuNs!)} + ${perOp((m) => m.receiverCpuNs!)}`;
      }),
    ]);
  const rtt = spec.scenarios.find((s) => s.kind === 'rtt');
  const bw = spec.scenarios.find((s) => s.kind === 'bw');
  const subject = spec.variants.find((v) => v.id === spec.subject)?.label ?? spec.subject;
  return [
    `Medians of ${reps} repetitions [min..max]` +
      (rtt ? `; round trip: median µs per ${rtt.size} B put` : '') +
      (bw ? `; bandwidth: MiB/s with ${bw.window} puts in flight` : '') +
      '.',
    table([head, ...rows]),
    ...(spec.notes ?? []),
    '',
    `Ratios of medians (targets judged on ${subject}${spec.ratios.some((r) => r.of) ? ' or the variant the ratio names' : ''}` +
      `${spec.extra.length ? '; extra columns for information' : ''}):`,
    table([['ratio', 'size', spec.subjectColumn, 'target', 'met', ...spec.extra.map((e) => e.column)], ...ratioRows]),
    '',
    'CPU time per operation, µs (sender + receiver, all threads, medians; less sensitive to other load than wall time):',
    table([['variant', ...spec.scenarios.map((s) => s.label)], ...cpuRows]),
    '',
    verdict(spec, report),
  ].join('\n');
}
