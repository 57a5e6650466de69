// The targets as absolute levels on the plots: a ratio's bound times the median it is taken
// against, or a goal's own bound, on the variant the target judges.
import { type Bound, type Ratio, type Results } from './read-results';

export interface TargetLevel {
  /** The judged variant's id. */
  variant: string;
  /** The scenario (or figure) the level applies at. */
  key: string;
  bound: Bound;
  /** In the median's own unit. */
  level: number;
  met: boolean;
  /** How the level came about, e.g. '>= 0.95 x raw write (loop)'. */
  rule: string;
}

/** Equal up to rounding: the ratio written and the one recomputed from the written medians. */
const same = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.abs(b);

/** a / b at a scenario, NaN where either was not measured. */
function ratioOf(r: Results, a: string, b: string, key: string): number {
  return (r.medians[a]?.[key] ?? NaN) / (r.medians[b]?.[key] ?? NaN);
}

/**
 * The variant the rows without `of` are of: config.subject, or else the one variant whose medians
 * give every such row's value (records written before conclude.ts recorded the subject). None when
 * no variant or more than one does: then those rows get no marks.
 */
export function subjectOf(r: Results): string | undefined {
  if (r.subject !== undefined) return r.subject;
  const rows = r.ratios.filter((x) => x.of === undefined && Number.isFinite(x.value));
  if (!rows.length) return undefined;
  const fits = r.variants.filter((v) => rows.every((x) => same(ratioOf(r, v.id, x.versus, x.scenario), x.value)));
  return fits.length === 1 ? fits[0].id : undefined;
}

export function targetLevels(r: Results): TargetLevel[] {
  const label = (id: string): string => r.variants.find((v) => v.id === id)?.label ?? id;
  const subject = subjectOf(r);
  const fromRatio = (x: Ratio): TargetLevel[] => {
    const variant = x.of ?? subject;
    if (!x.target || x.met === undefined || variant === undefined) return [];
    // Only rows that are the ratio of two variants' medians at their scenario become levels; the
    // others (bench:ring's around() over its own hop time) do not.
    if (variant === x.versus || !same(ratioOf(r, variant, x.versus, x.scenario), x.value)) return [];
    const level = x.target.value * r.medians[x.versus][x.scenario];
    return [{ variant, key: x.scenario, bound: x.target, level, met: x.met, rule: `${x.target.op} ${x.target.value} x ${label(x.versus)}` }];
  };
  const goals = r.goals
    .filter((g) => g.met !== undefined)
    .map((g): TargetLevel => ({ variant: g.row, key: g.scenario, bound: g.target, level: g.target.value, met: g.met!, rule: `${g.target.op} ${g.target.value}` }));
  return [...r.ratios.flatMap(fromRatio), ...goals];
}
