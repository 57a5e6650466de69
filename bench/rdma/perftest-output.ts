// Reads the result table perftest's ib_write_bw / ib_write_lat print:
//    #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
//    65536      400              25.37              22.95               0.000367
// Columns are found by their heading (which carries the unit), never by position, and
// anything unexpected (no table, two tables, a missing column, a value that is not a number)
// throws with the output attached, so a changed perftest cannot turn into wrong numbers.
import { resultRow } from '../common/result-row';

/** "#bytes", "#iterations", or a name with its unit in brackets, e.g. "99% percentile[usec]". */
const HEADING = /#\w+|[^\s#][^#[\]]*?\[[^\]]*\]/g;

function fail(why: string, output: string): never {
  throw new Error(`cannot read perftest's output (${why}):\n${output.trimEnd()}`);
}

/** The one result row, by column heading; `required` headings must be present. */
export function parseResultTable(output: string, required: string[]): Record<string, number> {
  const lines = output.split('\n');
  const heads = lines.flatMap((line, i) => (line.trim().startsWith('#bytes') ? [i] : []));
  if (heads.length !== 1) fail(`${heads.length} result tables, expected 1`, output);
  const names = lines[heads[0]].match(HEADING) ?? [];
  const valueLine = lines.slice(heads[0] + 1).find((line) => line.trim() !== '');
  const values = (valueLine ?? '').trim().split(/\s+/).map(Number);
  return resultRow(names, values, required, (why) => fail(why, output));
}
