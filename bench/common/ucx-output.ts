// Reads ucx_perftest's result table (1.x, plain format, without -f):
//   |              |              |        latency (usec)        |   bandwidth (MB/s)  |  message rate (msg/s) |
//   |    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |
//   [thread 0]               537      0.691  1877.231  1877.231      532.70     532.70         533         533
//   Final:                100000      0.165     0.503     0.503       15.17      15.17     1989000     1989000
// Columns are named by their group and heading ("bandwidth (MB/s) overall") by where they sit
// under the group line, never by position, and only the one "Final:" line counts. Anything
// unexpected throws with the output attached, so a changed ucx_perftest cannot turn into wrong numbers.
import { resultRow } from './result-row';

function fail(why: string, output: string): never {
  throw new Error(`cannot read ucx_perftest's output (${why}):\n${output.trimEnd()}`);
}

/** The cells of a `| a | b |` line with the column each starts and ends at. */
function cells(line: string): { text: string; from: number; to: number }[] {
  const bars = [...line.matchAll(/\|/g)].map((m) => m.index!);
  return bars.slice(0, -1).map((from, i) => ({ text: line.slice(from + 1, bars[i + 1]).trim(), from, to: bars[i + 1] }));
}

/** The Final row by column name, e.g. "# iterations", "latency (usec) 50.0%ile", "bandwidth (MB/s) overall". */
export function parseUcxFinal(output: string, required: string[]): Record<string, number> {
  const lines = output.split('\n');
  const headAt = lines.findIndex((line) => line.startsWith('|') && line.includes('# iterations'));
  if (headAt < 0) fail('no table heading with "# iterations"', output);
  const groupLine = lines.slice(0, headAt).reverse().find((line) => line.startsWith('|'));
  if (!groupLine) fail('no group line above the headings', output);
  const groups = cells(groupLine).filter((g) => g.text !== '');
  const heads = cells(lines[headAt]);
  if (heads[0]?.text !== 'Stage' && heads[0]?.text !== 'Test') fail(`first column "${heads[0]?.text}"`, output);
  const names = heads.slice(1).map((h) => {
    if (h.text === '# iterations') return h.text;
    const group = groups.find((g) => g.from <= h.from && h.to <= g.to);
    if (!group) fail(`column "${h.text}" under no group`, output);
    return `${group.text} ${h.text}`;
  });
  const finals = lines.filter((line) => line.startsWith('Final:'));
  if (finals.length !== 1) fail(`${finals.length} "Final:" lines, expected 1`, output);
  const values = finals[0].slice('Final:'.length).trim().split(/\s+/).map(Number);
  return resultRow(names, values, required, (why) => fail(why, output));
}
