// The vega-lite specs of one results record: bandwidth by message size, round-trip times, and,
// for records whose medians are figures of their own (bench:ring, bench:tcp's rate part), a bar
// panel per figure. Targets are triangles in the colour of the variant they judge.
import type { TopLevelSpec } from 'vega-lite';
import { sizeLabel } from '../sizes';
import { type Results, type Scenario } from './read-results';
import { type TargetLevel, targetLevels } from './targets';

export interface Chart {
  /** File name suffix: <results file>-<name>.svg. */
  name: string;
  title: string;
  spec: TopLevelSpec;
}

type LayerSpec = Extract<TopLevelSpec, { layer: unknown }>;
type Layer = LayerSpec['layer'][number];
type Unit = Extract<Layer, { mark: unknown }>;
type Encoding = NonNullable<Unit['encoding']>;
type Panel = Extract<TopLevelSpec, { vconcat: unknown }>['vconcat'][number];

const WIDTH = 640;
/**
 * Without a canvas vega estimates a text's width as 0.8 x font size per character: labels are
 * laid out at that width (never cut: limits off), and the bars get what is left of WIDTH.
 */
const textWidth = (text: string, fontSize = 10): number => 0.8 * fontSize * text.length;
// Unquoted: resvg skips quoted family names; the first one installed is used.
const FONT = 'Helvetica, Arial, DejaVu Sans, Liberation Sans, sans-serif';
/** The target marks' legend entries and shapes (paths in the unit square): up for a floor, down for a ceiling. */
const STATUS_SHAPES: [string, string][] = [
  ['min target (met)', 'M0,-1L1,0.8L-1,0.8Z'],
  // Hollow: an inner triangle wound the other way cuts the hole, so the outline keeps the variant's colour.
  ['min target (missed)', 'M0,-1L1,0.8L-1,0.8Z M0,-0.45L-0.52,0.5L0.52,0.5Z'],
  ['max target (met)', 'M0,1L1,-0.8L-1,-0.8Z'],
  ['max target (missed)', 'M0,1L1,-0.8L-1,-0.8Z M0,0.45L-0.52,-0.5L0.52,-0.5Z'],
];

const statusOf = (t: TargetLevel): string => `${t.bound.op === '>=' ? 'min' : 'max'} target (${t.met ? 'met' : 'missed'})`;

/** One median (or target level) of one variant; size on the bandwidth plot. */
interface Datum {
  variant: string;
  value: number;
  /** The repetitions' min and max, where the record has them. */
  min?: number;
  max?: number;
  size?: number;
  status?: string;
  description?: string;
}

/** What every chart of a record shares: the variants' labels and colours, the target levels. */
interface Context {
  r: Results;
  /** Every variant's label, in the record's order: the colour scale's domain. */
  labels: string[];
  levels: TargetLevel[];
  label(id: string): string;
}

function context(r: Results): Context {
  const label = (id: string): string => r.variants.find((v) => v.id === id)?.label ?? id;
  // Variants found only in medians are drawn under their ids.
  const ids = [...r.variants.map((v) => v.id), ...Object.keys(r.medians).filter((id) => !r.variants.some((v) => v.id === id))];
  return { r, labels: ids.map(label), levels: targetLevels(r), label };
}

/** The medians at one scenario (or figure), in variant order. */
function medians(c: Context, key: string): Datum[] {
  return Object.entries(c.r.medians)
    .filter(([, m]) => m[key] !== undefined)
    .map(([id, m]) => {
      const range = c.r.ranges[id]?.[key];
      return { variant: c.label(id), value: m[key], ...(range ? { min: range[0], max: range[1] } : {}) };
    })
    .sort((a, b) => c.labels.indexOf(a.variant) - c.labels.indexOf(b.variant));
}

function targets(c: Context, key: string, at: string, unit: string): Datum[] {
  return c.levels
    .filter((t) => t.key === key)
    .map((t) => ({
      variant: c.label(t.variant),
      value: t.level,
      status: statusOf(t),
      // The mark's aria-label in the SVG.
      description: `${statusOf(t)}: ${c.label(t.variant)} ${t.rule} at ${at} = ${t.level.toPrecision(4)} ${unit}`,
    }));
}

/** The same colour for a variant in every plot of a record; the legend lists those drawn. */
function color(c: Context, legend: string[] | null): Encoding['color'] {
  return {
    field: 'variant',
    type: 'nominal',
    title: 'variant',
    scale: { domain: c.labels, scheme: c.labels.length > 10 ? 'tableau20' : 'tableau10' },
    legend: legend && { values: legend, orient: 'bottom', columns: Math.max(1, Math.floor(WIDTH / (Math.max(...legend.map((l) => textWidth(l))) + 40))) },
  };
}

/** The whole domain in every panel of a chart, so that they share one scale; the legend lists `shown`. */
function shape(shown: string[]): Encoding['shape'] {
  return {
    field: 'status',
    type: 'nominal',
    title: 'target',
    scale: { domain: STATUS_SHAPES.map(([s]) => s), range: STATUS_SHAPES.map(([, path]) => path) },
    // Above the plot: below it, beside the variants, it would widen the picture.
    legend: { values: shown, orient: 'top', symbolFillColor: '#555', symbolStrokeWidth: 0 },
  };
}

/** The target statuses on a chart of these scenarios (or figures), in legend order. */
function statuses(c: Context, keys: string[]): string[] {
  const present = new Set(c.levels.filter((t) => keys.includes(t.key)).map(statusOf));
  return STATUS_SHAPES.map(([s]) => s).filter((s) => present.has(s));
}

function targetLayer(c: Context, marks: Datum[], x: Encoding['x'], y: Encoding['y'], legend: string[] | null, shown: string[]): Layer {
  return {
    data: { values: marks },
    mark: { type: 'point', filled: true, opacity: 1, size: 140 },
    encoding: { x, y, color: color(c, legend), shape: shape(shown), description: { field: 'description' } },
  };
}

/** Whiskers from each median's repetitions' min to max: `at` places them (x and y, and x2 or y2). */
function rangeLayer(c: Context, data: Datum[], at: Pick<Encoding, 'x' | 'y' | 'x2' | 'y2'>, legend: string[] | null): Layer {
  return { data: { values: data }, mark: { type: 'rule', strokeWidth: 1.5 }, encoding: { ...at, color: color(c, legend) } };
}

function chart(c: Context, name: string, what: string, marked: boolean, body: Omit<LayerSpec, 'title'> | { vconcat: Panel[] }): Chart {
  const { bench, date, commit, modified } = c.r;
  const when = date?.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
  const revision = commit && `commit ${commit.slice(0, 10)}${modified ? ' (sources modified)' : ''}`;
  const heading = `${bench ?? 'results'}: ${what}`;
  const about = [when, revision].filter(Boolean).join(', ');
  // Lines short enough for WIDTH at vega's estimate of their width.
  const note = ["triangles: a target's level for the variant in its colour", '(bound x the median compared with); filled met, hollow missed'];
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: heading, anchor: 'start', subtitle: [...(about ? [about] : []), ...(marked ? note : [])] },
    config: { font: FONT, axis: { labelLimit: 0 }, legend: { labelLimit: 0 } },
    ...body,
  };
  return { name, title: [heading, about].filter(Boolean).join(', '), spec };
}

/** A unit as an axis title: a long one on two lines, before and from its first parenthesis. */
function axisTitle(unit: string): string | string[] {
  const cut = unit.indexOf(' (');
  return unit.length > 40 && cut > 0 ? [unit.slice(0, cut), unit.slice(cut + 1)] : unit;
}

/** MiB/s by message size, a line per variant; targets at the levels they ask. */
function bandwidth(c: Context): Chart | undefined {
  const scenarios = c.r.scenarios.filter((s): s is Scenario & { size: number } => s.kind === 'bw' && s.size !== undefined && s.size > 0);
  const unit = c.r.units.bw ?? 'MiB/s';
  const lines = scenarios.flatMap((s) => medians(c, s.id).map((d) => ({ ...d, size: s.size })));
  if (!lines.length) return undefined;
  const marks = scenarios.flatMap((s) => targets(c, s.id, s.label, 'MiB/s').map((d) => ({ ...d, size: s.size })));
  const sizes = [...new Set(lines.map((d) => d.size))].sort((a, b) => a - b);
  const legend = [...new Set(lines.map((d) => d.variant))];
  const x: Encoding['x'] = {
    field: 'size',
    type: 'quantitative',
    title: 'message size',
    scale: { type: 'log', base: 2, domain: [sizes[0] / 1.6, sizes[sizes.length - 1] * 1.6], nice: false },
    axis: { values: sizes, labelExpr: sizes.map((s) => `datum.value === ${s} ? '${sizeLabel(s)}' : `).join('') + "''", grid: false },
  };
  // Rows two orders of magnitude apart (memcpy beside a socket) flatten on a linear axis.
  const values = [...lines, ...marks].map((d) => d.value).filter((v) => v > 0);
  const wide = Math.max(...values) / Math.min(...values) > 30;
  const title = axisTitle(wide ? `${unit} (log scale)` : unit);
  const y: Encoding['y'] = { field: 'value', type: 'quantitative', title, ...(wide ? { scale: { type: 'log' } } : {}) };
  const ranged = lines.filter((d) => d.min !== undefined);
  return chart(c, 'bandwidth', 'bandwidth', marks.length > 0, {
    width: WIDTH - 80,
    height: 320,
    layer: [
      { data: { values: lines }, mark: { type: 'line', point: true }, encoding: { x, y, color: color(c, legend) } },
      // Each point's repetitions, min to max.
      ...(ranged.length ? [rangeLayer(c, ranged, { x, y: { ...y, field: 'min' }, y2: { field: 'max' } }, legend)] : []),
      ...(marks.length ? [targetLayer(c, marks, x, y, legend, statuses(c, scenarios.map((s) => s.id)))] : []),
    ],
  });
}

/** Horizontal bars, one per variant, of one scenario or figure. */
function barPanel(c: Context, key: string, heading: string, unit: string, shown: string[]): Panel | undefined {
  const bars = medians(c, key);
  if (!bars.length) return undefined;
  const marks = targets(c, key, heading, unit);
  // A unit reading '...; ...' goes on two lines.
  const x: Encoding['x'] = { field: 'value', type: 'quantitative', title: unit.split('; ') };
  const y: Encoding['y'] = { field: 'variant', type: 'nominal', title: null, sort: c.labels };
  return {
    title: { text: heading, anchor: 'start', fontSize: 12 },
    width: Math.max(240, WIDTH - 20 - Math.max(...c.labels.map((l) => textWidth(l)))),
    height: { step: 18 },
    layer: [
      { data: { values: bars }, mark: { type: 'bar', opacity: 0.6 }, encoding: { x, y, color: color(c, null) } },
      // Each bar's repetitions, min to max.
      ...(bars.some((d) => d.min !== undefined) ? [rangeLayer(c, bars.filter((d) => d.min !== undefined), { x: { ...x, field: 'min' }, x2: { field: 'max' }, y }, null)] : []),
      ...(marks.length ? [targetLayer(c, marks, x, y, null, shown)] : []),
    ],
  };
}

function panels(c: Context, name: string, what: string, parts: { key: string; heading: string; unit: string }[]): Chart | undefined {
  const shown = statuses(c, parts.map((p) => p.key));
  const drawn = parts.map((p) => barPanel(c, p.key, p.heading, p.unit, shown)).filter((p): p is Panel => p !== undefined);
  if (!drawn.length) return undefined;
  return chart(c, name, what, shown.length > 0, { vconcat: drawn });
}

/** µs per round trip of every rtt scenario, a bar per variant. */
function roundTrips(c: Context): Chart | undefined {
  const rtt = c.r.scenarios.filter((s) => s.kind === 'rtt');
  const unit = (s: Scenario): string => c.r.units[s.id] ?? c.r.units.rtt ?? 'µs per round trip';
  return panels(c, 'round-trips', 'round trips', rtt.map((s) => ({ key: s.id, heading: s.label, unit: unit(s) })));
}

/**
 * Every median key (the scenarios first, then figures such as bench:ring's hopP99), a bar panel
 * each with its unit: the record's unit for the key, for a figure derived from one (hopP99 from
 * hop) that one's, or the one unit of all medians.
 */
function figures(c: Context): Chart | undefined {
  const { scenarios, medians: all, units } = c.r;
  const keys = [...new Set([...scenarios.map((s) => s.id), ...Object.values(all).flatMap((m) => Object.keys(m))])];
  const unit = (key: string): string => {
    const base = Object.keys(units).filter((u) => key.startsWith(u)).sort((a, b) => b.length - a.length)[0];
    return units[key] ?? (base && units[base]) ?? units.medians ?? 'median';
  };
  const heading = (key: string): string => scenarios.find((s) => s.id === key)?.label ?? key;
  return panels(c, 'medians', 'medians', keys.map((key) => ({ key, heading: heading(key), unit: unit(key) })));
}

export function charts(r: Results): Chart[] {
  const c = context(r);
  const drawn = r.layout === 'sized' ? [bandwidth(c), roundTrips(c)] : [figures(c)];
  return drawn.filter((x): x is Chart => x !== undefined);
}
