// The last step of reading a benchmark tool's result table (perftest, ucx_perftest): its values
// named by their columns, every one a number, the required ones present; anything else throws.

/** names[i] -> values[i]; `fail` says what is wrong (and throws) when the row is not whole. */
export function resultRow(names: string[], values: number[], required: string[], fail: (why: string) => never): Record<string, number> {
  if (values.length !== names.length) fail(`${names.length} headings but ${values.length} values`);
  if (!values.every(Number.isFinite)) fail('a value is not a number');
  const row: Record<string, number> = {};
  names.forEach((name, i) => (row[name] = values[i]));
  const missing = required.filter((name) => !(name in row));
  if (missing.length) fail(`no column ${missing.join(', ')}`);
  return row;
}
