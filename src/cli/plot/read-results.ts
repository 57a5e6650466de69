// Reads one benchmark results record (bench/common/results.ts saveResults) into the typed form
// the plots are drawn from; a record it cannot read is ERR_RVMA_INVALID_ARGUMENT naming the file and the field.
import * as path from 'node:path';
import { RvmaError } from '../../base/errors';

export interface Scenario {
  id: string;
  label: string;
  kind?: string;
  /** bytes per message */
  size?: number;
}

export interface Variant {
  id: string;
  /** The record's label; where two variants share one, with the placement (or id) added. */
  label: string;
}

/** A ratio's target or a goal: the value must be at least (>=) or at most (<=) `value`. */
export interface Bound {
  op: '>=' | '<=';
  value: number;
}

/**
 * A ratio row: median(of ?? subject) / median(versus) at scenario where buildReport made it (not
 * every row of bench:ring's; targets.ts tells them apart).
 */
export interface Ratio {
  versus: string;
  scenario: string;
  of?: string;
  /** NaN where a side was not measured (JSON null) */
  value: number;
  target?: Bound;
  met?: boolean;
}

/** An absolute target on one variant's median (bench:tcp's rate part). */
export interface Goal {
  row: string;
  scenario: string;
  target: Bound;
  met?: boolean;
}

export interface Results {
  /** From the file name <bench>-<ISO stamp>.json. */
  bench?: string;
  date?: string;
  commit?: string;
  /** The library sources differed from the commit. */
  modified: boolean;
  /**
   * 'sized': buildReport's medians, µs per round trip (rtt) and MiB/s (bw) by scenario kind, as
   * units.rtt and units.bw say (bench:rendezvous keeps units.bw, names its rtt scenario's unit).
   * 'figures': every median key has its own meaning (bench:ring's figures, bench:tcp's
   * messages/s), whatever the scenario kinds say: those units have neither rtt nor bw.
   */
  layout: 'sized' | 'figures';
  scenarios: Scenario[];
  variants: Variant[];
  /** medians[variant][scenario or figure], finite values only */
  medians: Record<string, Record<string, number>>;
  /**
   * ranges[variant][scenario]: [min, max] over the repetitions, for the sized layout, where the
   * record's samples give back its median (records without samples have none).
   */
  ranges: Record<string, Record<string, [number, number]>>;
  ratios: Ratio[];
  goals: Goal[];
  units: Record<string, string>;
  /** config.subject: the variant the ratios without `of` are of, where the record names it. */
  subject?: string;
}

type Json = Record<string, unknown>;

const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** What a value is, for a message saying it is not what it should be. */
function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  return typeof x === 'object' ? 'an object' : `${typeof x} ${JSON.stringify(x)}`;
}

/** bench/common/placement.ts's modes, as the reports name them. */
const PLACEMENT_NAMES: Record<string, string> = { same: 'same CPU', split: 'split', none: 'unpinned' };

/** <bench>-<ISO stamp>.json, as saveResults names its files. */
const STAMPED = /^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z\.json$/;

/** source: the file (or what the record is) that messages name. */
export function readResults(record: unknown, source = 'results record'): Results {
  const fail = (what: string): never => {
    throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `${source}: ${what}`);
  };
  /** x if it passes, else an Error: `name` is missing, or must be `kind`. */
  const check = <T>(x: unknown, name: string, kind: string, ok: (x: unknown) => x is T): T =>
    ok(x) ? x : fail(x === undefined ? `${name} is missing` : `${name} must be ${kind}, not ${describe(x)}`);
  const object = (x: unknown, name: string): Json => check(x, name, 'an object', isObject);
  const array = (x: unknown, name: string): unknown[] => check(x, name, 'an array', Array.isArray);
  const string = (x: unknown, name: string): string => check(x, name, 'a string', (v): v is string => typeof v === 'string');
  const number = (x: unknown, name: string): number => check(x, name, 'a number', (v): v is number => typeof v === 'number');
  const boolean = (x: unknown, name: string): boolean => check(x, name, 'true or false', (v): v is boolean => typeof v === 'boolean');
  const optional = <T>(x: unknown, read: (x: unknown) => T): T | undefined => (x === undefined ? undefined : read(x));
  const bound = (x: unknown, name: string): Bound => {
    const m = /^(>=|<=)\s*(\S+)$/.exec(string(x, name));
    const value = Number(m?.[2]);
    return m && Number.isFinite(value) ? { op: m[1] as Bound['op'], value } : fail(`${name} must read '>= x' or '<= x', not ${JSON.stringify(x)}`);
  };

  const top = isObject(record) ? record : fail(`a results record must be a JSON object, not ${describe(record)}`);
  const config = object(top.config, 'config');

  const scenarios = array(config.scenarios, 'config.scenarios').map((x, i): Scenario => {
    const name = `config.scenarios[${i}]`;
    const s = object(x, name);
    const size = optional(s.size, (v) => number(v, `${name}.size`));
    const kind = optional(s.kind, (v) => string(v, `${name}.kind`));
    return { id: string(s.id, `${name}.id`), label: string(s.label, `${name}.label`), ...(kind === undefined ? {} : { kind }), ...(size === undefined ? {} : { size }) };
  });

  const raw = array(config.variants, 'config.variants').map((x, i) => {
    const name = `config.variants[${i}]`;
    const v = object(x, name);
    return { id: string(v.id, `${name}.id`), label: string(v.label, `${name}.label`), placement: v.placement };
  });
  // bench:ring and bench:rendezvous run every transport at several placements under one label.
  const shared = (label: string): boolean => raw.filter((v) => v.label === label).length > 1;
  const variants = raw.map(({ id, label, placement }): Variant => ({
    id,
    label: shared(label) ? `${label} (${typeof placement === 'string' ? (PLACEMENT_NAMES[placement] ?? placement) : id})` : label,
  }));

  const medians: Results['medians'] = {};
  for (const [variant, row] of Object.entries(object(top.medians, 'medians'))) {
    medians[variant] = {};
    for (const [key, value] of Object.entries(object(row, `medians.${variant}`))) {
      // JSON.stringify writes NaN as null: not measured.
      if (value !== null) medians[variant][key] = number(value, `medians.${variant}.${key}`);
    }
  }

  const ratios = array(top.ratios, 'ratios').map((x, i): Ratio => {
    const name = `ratios[${i}]`;
    const r = object(x, name);
    const of = optional(r.of, (v) => string(v, `${name}.of`));
    const target = optional(r.target, (v) => bound(v, `${name}.target`));
    const met = optional(r.met, (v) => boolean(v, `${name}.met`));
    return {
      versus: string(r.versus, `${name}.versus`),
      scenario: string(r.scenario, `${name}.scenario`),
      value: r.value === null ? NaN : number(r.value, `${name}.value`),
      ...(of === undefined ? {} : { of }),
      ...(target === undefined ? {} : { target }),
      ...(met === undefined ? {} : { met }),
    };
  });

  const goals = (optional(top.goals, (v) => array(v, 'goals')) ?? []).map((x, i): Goal => {
    const name = `goals[${i}]`;
    const g = object(x, name);
    const met = optional(g.met, (v) => boolean(v, `${name}.met`));
    return { row: string(g.row, `${name}.row`), scenario: string(g.scenario, `${name}.scenario`), target: bound(g.target, `${name}.target`), ...(met === undefined ? {} : { met }) };
  });

  // saveResults spreads a benchmark's extra fields over the record, so its units replace the
  // default ones there; a record keeping them under extra is read the same.
  const extra = optional(top.extra, (v) => object(v, 'extra'));
  const unitsAt = extra?.units !== undefined ? 'extra.units' : 'units';
  const units: Record<string, string> = {};
  for (const [key, text] of Object.entries(object(extra?.units ?? top.units, unitsAt))) units[key] = string(text, `${unitsAt}.${key}`);

  const layout: Results['layout'] = 'rtt' in units || 'bw' in units ? 'sized' : 'figures';
  const ranges = layout === 'sized' ? rangesOf(top.samples, scenarios, medians) : {};

  const revision = top.revision === null ? undefined : optional(top.revision, (v) => object(v, 'revision'));
  const commit = optional(revision?.commit, (v) => string(v, 'revision.commit'));
  const modified = optional(revision?.librarySourcesModified, (v) => boolean(v, 'revision.librarySourcesModified')) ?? false;
  const date = optional(top.date, (v) => string(v, 'date'));
  const subject = optional(config.subject, (v) => string(v, 'config.subject'));
  const bench = STAMPED.exec(path.basename(source))?.[1];
  return {
    ...(bench === undefined ? {} : { bench }),
    ...(date === undefined ? {} : { date }),
    ...(commit === undefined ? {} : { commit }),
    modified,
    layout,
    scenarios,
    variants,
    medians,
    ranges,
    ratios,
    goals,
    units,
    ...(subject === undefined ? {} : { subject }),
  };
}

/** What bench/common/report.ts's valueOf makes of one measurement: µs per round trip, or MiB/s. */
function valueOf(kind: string | undefined, m: Json): number {
  if (kind === 'rtt') return typeof m.medianOpNs === 'number' ? m.medianOpNs / 1000 : NaN;
  return typeof m.bytes === 'number' && typeof m.elapsedNs === 'number' ? m.bytes / 2 ** 20 / (m.elapsedNs / 1e9) : NaN;
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The min and max over each cell's repetitions. A cell whose samples do not give back the
 * recorded median (a suite that computes its figures otherwise) gets none: a bar must never
 * span values the median was not taken from.
 */
function rangesOf(samples: unknown, scenarios: Scenario[], medians: Results['medians']): Results['ranges'] {
  const ranges: Results['ranges'] = {};
  if (!isObject(samples)) return ranges;
  for (const [variant, row] of Object.entries(samples)) {
    if (!isObject(row)) continue;
    for (const s of scenarios) {
      const cell = row[s.id];
      const median = medians[variant]?.[s.id];
      if (!Array.isArray(cell) || median === undefined) continue;
      const values = cell.filter(isObject).map((m) => valueOf(s.kind, m));
      if (!values.length || !values.every(Number.isFinite)) continue;
      if (Math.abs(medianOf(values) - median) > 1e-9 * Math.max(1, Math.abs(median))) continue;
      (ranges[variant] ??= {})[s.id] = [Math.min(...values), Math.max(...values)];
    }
  }
  return ranges;
}
