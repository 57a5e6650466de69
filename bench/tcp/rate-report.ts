// The rate part's report: medians in messages/s per row and scenario, ratios of medians, the
// absolute targets, as printed tables and as the JSON record's fields.
import { type Measurement } from '../common/protocol';
import { type RatioRow, type Samples } from '../common/report';
import { fixed, median, table } from '../common/stats';
import { MESSAGE_BYTES, type RateGoal, type RateRatio, type RateScenario, type RateVariant, byTool } from './rate-config';

export interface GoalRow {
  row: string;
  scenario: string;
  value: number;
  target: string;
  met?: boolean;
}

export interface RateReport {
  /** Medians in messages/s. */
  medians: Record<string, Record<string, number>>;
  ratios: RatioRow[];
  goals: GoalRow[];
}

/** What a bench's rate part judges: ratios of medians (some with a target) and absolute targets. */
export interface RateTargets {
  ratios: RateRatio[];
  goals: RateGoal[];
}

export function messagesPerSecond(m: Measurement): number {
  return m.ops / (m.elapsedNs / 1e9);
}

export function buildRateReport(
  scenarios: RateScenario[],
  variants: RateVariant[],
  samples: Samples,
  targets: RateTargets,
): RateReport {
  const medians: RateReport['medians'] = {};
  for (const v of variants) {
    medians[v.id] = {};
    for (const s of scenarios) {
      const values = (samples[v.id]?.[s.id] ?? []).map(messagesPerSecond);
      if (values.length) medians[v.id][s.id] = median(values);
    }
  }
  const at = (row: string, scenario: string): number => medians[row]?.[scenario] ?? NaN;
  const known = (id: string): boolean => variants.some((v) => v.id === id);
  const shown = targets.ratios.filter((r) => known(r.of) && known(r.versus) && scenarios.some((s) => s.id === r.scenario));
  const ratios = shown.map(({ of, versus, scenario, min }): RatioRow => {
    const value = at(of, scenario) / at(versus, scenario);
    const row: RatioRow = { of, versus, scenario, value, extra: {} };
    if (min !== undefined) {
      row.target = `>= ${min.toFixed(2)}`;
      if (Number.isFinite(value)) row.met = value >= min; // judged only where both sides were measured
    }
    return row;
  });
  const goals = targets.goals.map(({ row, scenario, min }): GoalRow => {
    const value = at(row, scenario);
    return { row, scenario, value, target: `>= ${min}`, ...(Number.isFinite(value) ? { met: value >= min } : {}) };
  });
  return { medians, ratios, goals };
}

/** Thousands, whole from 100k up; below, to three figures (bench:rdma's guest moves a few thousand/s). */
const thousands = (v: number): string => fixed(v / 1000, v >= 100_000 ? 0 : v >= 10_000 ? 1 : 2);

function label(scenarios: RateScenario[], id: string): string {
  return scenarios.find((s) => s.id === id)?.label ?? id;
}

/** One line: whether every target was met, and which were not. */
function verdict(scenarios: RateScenario[], report: RateReport): string {
  const at = (id: string): string => ` at ${label(scenarios, id)}`;
  const all = [
    ...report.ratios
      .filter((r) => r.target !== undefined)
      .map((r) => ({ name: `${r.of}/${r.versus}${at(r.scenario)}`, value: fixed(r.value, 2), target: r.target!, met: r.met })),
    ...report.goals.map((g) => ({ name: `${g.row}${at(g.scenario)}`, value: `${thousands(g.value)}k`, target: g.target, met: g.met })),
  ];
  const judged = all.filter((t) => t.met !== undefined);
  const gaps = all.length > judged.length ? `; ${all.length - judged.length} not measured` : '';
  const missed = judged.filter((t) => !t.met);
  if (!judged.length) return `rate: no target measured${gaps}`;
  if (!missed.length) return `rate: target met (${judged.length} of ${judged.length}${gaps})`;
  const list = missed.map((t) => `${t.name} = ${t.value} (${t.target})`).join('; ');
  return `rate: target NOT met (${missed.length} of ${judged.length}${gaps}): ${list}`;
}

export function formatRateReport(
  scenarios: RateScenario[],
  variants: RateVariant[],
  samples: Samples,
  report: RateReport,
  reps: number,
  notes: string[],
  /** Where the messages travel, e.g. 'TCP loopback'. */
  over: string,
): string {
  const cell = (v: RateVariant, s: RateScenario): string => {
    const values = (samples[v.id]?.[s.id] ?? []).map(messagesPerSecond);
    if (!values.length) return '-';
    const n = values.length < reps ? ` n=${values.length}` : '';
    const pairs = v.transport === 'ucx' && s.senders > 1 ? `(${s.senders} pairs) ` : '';
    const range = `[${thousands(Math.min(...values))}..${thousands(Math.max(...values))}]`;
    return `${pairs}${thousands(report.medians[v.id][s.id])} ${range}${n}`;
  };
  const cpu = (v: RateVariant, s: RateScenario): string => {
    const ms = (samples[v.id]?.[s.id] ?? []).filter((m) => m.senderCpuNs !== undefined && m.receiverCpuNs !== undefined);
    if (!ms.length) return '-';
    const messages = s.senders * (s.warmup + s.count);
    const perMessage = (ns: (m: Measurement) => number): string => fixed(median(ms.map((m) => ns(m) / messages)) / 1000, 2);
    return `${perMessage((m) => m.senderCpuNs!)} + ${perMessage((m) => m.receiverCpuNs!)}`;
  };
  const cpuRows = variants.filter((v) => !byTool(v)).map((v) => [v.label, ...scenarios.map((s) => cpu(v, s))]);
  const met = (m: boolean | undefined): string => (m === undefined ? '-' : m ? 'yes' : 'NO');
  const ratioRows = report.ratios.map((r) => [
    `${r.of}/${r.versus}`,
    label(scenarios, r.scenario),
    fixed(r.value, 2),
    r.target ?? '-',
    met(r.met),
  ]);
  const goalRows = report.goals.map((g) => [g.row, label(scenarios, g.scenario), fixed(g.value, 0), g.target, met(g.met)]);
  return [
    `Message rate, ${MESSAGE_BYTES}-byte messages over ${over}: medians of ${reps} repetitions [min..max], ` +
      'thousands of messages/s.',
    table([['row', ...scenarios.map((s) => s.label)], ...variants.map((v) => [v.label, ...scenarios.map((s) => cell(v, s))])]),
    ...notes,
    '',
    'CPU time per message, µs (all senders + receiver, all threads, medians; warm-up included):',
    table([['row', ...scenarios.map((s) => s.label)], ...cpuRows]),
    '',
    'Ratios of medians (messages/s):',
    table([['ratio', 'scenario', 'value', 'target', 'met'], ...ratioRows]),
    ...(goalRows.length ? ['', 'Targets (messages/s):', table([['row', 'scenario', 'median', 'target', 'met'], ...goalRows])] : []),
    '',
    verdict(scenarios, report),
  ].join('\n');
}
