// Command-line options shared by the benchmarks' run.ts.

/** The value after `name` on the command line, if given. */
export function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** --reps N, or the benchmark's default. */
export function repetitions(fallback: number): number {
  const n = Number(option('--reps') ?? fallback);
  if (!Number.isInteger(n) || n < 1) throw new Error('--reps needs a positive integer');
  return n;
}

/** The items whose id is in the comma-separated option `name` (e.g. --variants a,b), or all of them. */
export function selected<T extends { id: string }>(name: string, items: T[]): T[] {
  const ids = option(name)?.split(',');
  if (!ids) return items;
  const unknown = ids.filter((id) => !items.some((item) => item.id === id));
  if (unknown.length) throw new Error(`${name}: unknown ${unknown.join(', ')} (known: ${items.map((i) => i.id).join(', ')})`);
  return items.filter((item) => ids.includes(item.id));
}
