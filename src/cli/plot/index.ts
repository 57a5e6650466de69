// Plots of one saved benchmark results file (bench/common/results.ts): SVG, and PNG beside it.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { RvmaError } from '../../base/errors';
import { charts } from './charts';
import { readResults } from './read-results';
import { toPng, toSvg } from './render';

export interface Plot {
  name: string;
  title: string;
  svg: string;
}

/** The plots of one results record (already JSON.parse'd). Throws ERR_RVMA_INVALID_ARGUMENT on a record it cannot read. */
export async function plotRecord(record: unknown, source?: string): Promise<Plot[]> {
  const plots: Plot[] = [];
  for (const c of charts(readResults(record, source))) plots.push({ name: c.name, title: c.title, svg: await toSvg(c.spec) });
  return plots;
}

/**
 * Reads resultsFile, writes <outDir>/<basename-without-.json>-<plot.name>.svg (and .png when png
 * !== false); returns the files written. outDir defaults to the results file's directory.
 */
export async function writePlots(resultsFile: string, options: { outDir?: string; png?: boolean } = {}): Promise<string[]> {
  const text = await fs.readFile(resultsFile, 'utf8');
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch (error) {
    throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `${resultsFile}: not valid JSON (${(error as Error).message})`);
  }
  const plots = await plotRecord(record, resultsFile);
  const outDir = options.outDir ?? path.dirname(resultsFile);
  await fs.mkdir(outDir, { recursive: true });
  const base = path.join(outDir, path.basename(resultsFile).replace(/\.json$/, ''));
  const written: string[] = [];
  for (const p of plots) {
    await fs.writeFile(`${base}-${p.name}.svg`, p.svg);
    written.push(`${base}-${p.name}.svg`);
    if (options.png === false) continue;
    await fs.writeFile(`${base}-${p.name}.png`, await toPng(p.svg));
    written.push(`${base}-${p.name}.png`);
  }
  return written;
}
