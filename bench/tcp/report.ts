// Turns the samples into medians, ratios and target checks, as printed tables and as JSON.
import { EXTRA_MAILBOX, MAILBOX, SCENARIOS, TARGETS, VARIANTS, WINDOW } from './config';
import { Measurement, Scenario } from './protocol';
import { fixed, median, mibPerSecond, table } from './stats';

/** samples[variant][scenario]: one measurement per repetition that succeeded. */
export type Samples = Record<string, Record<string, Measurement[]>>;

export interface RatioRow {
  versus: string;
  scenario: string;
  /** mailbox (loop) over `versus`, from medians: bandwidth ratio, or time ratio for rtt */
  value: number;
  target?: string;
  met?: boolean;
  /** the same ratio for the extra mailbox rows (thread progress, stripes) */
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

export function buildReport(samples: Samples): Report {
  const medians: Report['medians'] = {};
  for (const v of VARIANTS) {
    medians[v.id] = {};
    for (const s of SCENARIOS) {
      const values = (samples[v.id]?.[s.id] ?? []).map((m) => valueOf(s, m));
      if (values.length) medians[v.id][s.id] = median(values);
    }
  }
  const ratio = (mailbox: string, versus: string, scenario: string): number =>
    (medians[mailbox]?.[scenario] ?? NaN) / (medians[versus]?.[scenario] ?? NaN);
  const ratios: RatioRow[] = [];
  const rows: [string, string][] = [['net', 'rtt8']];
  for (const versus of ['net', 'c', 'raw']) for (const s of ['bw64k', 'bw1m', 'bw16m']) rows.push([versus, s]);
  for (const [versus, scenario] of rows) {
    const value = ratio(MAILBOX, versus, scenario);
    const spec = TARGETS.find((t) => t.versus === versus && t.scenario === scenario);
    const extra: Record<string, number> = {};
    for (const id of EXTRA_MAILBOX) extra[id] = ratio(id, versus, scenario);
    const row: RatioRow = { versus, scenario, value, extra };
    if (spec) {
      row.target = spec.min !== undefined ? `>= ${spec.min.toFixed(2)}` : `<= ${spec.max!.toFixed(2)}`;
      row.met = Number.isFinite(value) && (spec.min !== undefined ? value >= spec.min : value <= spec.max!);
    }
    ratios.push(row);
  }
  return { medians, ratios };
}

export function formatReport(samples: Samples, report: Report, reps: number): string {
  const head = ['variant', ...SCENARIOS.map((s) => `${s.label} ${s.kind === 'rtt' ? '(µs)' : '(MiB/s)'}`)];
  const rows = VARIANTS.map((v) => [
    v.label,
    ...SCENARIOS.map((s) => {
      const values = (samples[v.id]?.[s.id] ?? []).map((m) => valueOf(s, m));
      if (!values.length) return '-';
      const digits = s.kind === 'rtt' ? 1 : 0;
      const lo = fixed(Math.min(...values), digits);
      const hi = fixed(Math.max(...values), digits);
      const n = values.length < reps ? ` n=${values.length}` : '';
      return `${fixed(report.medians[v.id][s.id], digits)} [${lo}..${hi}]${n}`;
    }),
  ]);
  const name = (id: string): string => (id === 'c' ? 'C' : id);
  const label = (scenario: string): string => SCENARIOS.find((s) => s.id === scenario)!.label;
  const ratioRows = report.ratios.map((r) => [
    `mailbox/${name(r.versus)}${r.scenario === 'rtt8' ? ' (time)' : ''}`,
    label(r.scenario),
    fixed(r.value, 2),
    r.target ?? '-',
    r.met === undefined ? '-' : r.met ? 'yes' : 'NO',
    ...EXTRA_MAILBOX.map((id) => fixed(r.extra[id], 2)),
  ]);
  const cpuRows = VARIANTS.filter((v) => samples[v.id]).map((v) => [
    v.label,
    ...SCENARIOS.map((s) => {
      const ms = (samples[v.id]?.[s.id] ?? []).filter((m) => m.senderCpuNs !== undefined && m.receiverCpuNs !== undefined);
      if (!ms.length) return '-';
      const perOp = (ns: (m: Measurement) => number): string => fixed(median(ms.map((m) => ns(m) / (s.warmup + s.count))) / 1000, 1);
      return `${perOp((m) => m.senderCpuNs!)} + ${perOp((m) => m.receiverCpuNs!)}`;
    }),
  ]);
  return [
    `Medians of ${reps} repetitions [min..max]; round trip: median µs per 8 B put; ` +
      `bandwidth: MiB/s with ${WINDOW} puts in flight.`,
    table([head, ...rows]),
    '',
    'Ratios of medians (targets judged on mailbox put, loop progress; extra columns for information):',
    table([['ratio', 'size', 'mailbox(loop)', 'target', 'met', 'thread', '2 stripes'], ...ratioRows]),
    '',
    'CPU time per operation, µs (sender + receiver, all threads, medians; less sensitive to other load than wall time):',
    table([['variant', ...SCENARIOS.map((s) => s.label)], ...cpuRows]),
  ].join('\n');
}
