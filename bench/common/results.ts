// Writes one run's results to bench/results/<bench>-<ISO date>.json (or the directory `rvma bench --out` names).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Report, type Samples } from './report';

export interface Failure {
  variant: string;
  scenario: string;
  repetition: number;
  error: string;
}

export interface RunRecord {
  loadBefore: number[];
  config: unknown;
  report: Report;
  samples: Samples;
  errors: Failure[];
  seconds: number;
  /** Anything else the benchmark wants on record (e.g. the tool versions it ran). */
  extra?: Record<string, unknown>;
}

/** The checked-out commit, and whether the library sources differ from it (null outside git). */
export function revision(root: string): { commit: string; librarySourcesModified: boolean } | null {
  try {
    const git = (...args: string[]): string =>
      execFileSync('git', args, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    const modified = git('status', '--porcelain', '--', 'src', 'native', 'CMakeLists.txt') !== '';
    return { commit: git('rev-parse', 'HEAD'), librarySourcesModified: modified };
  } catch {
    return null;
  }
}

/** Where results go: RVMA_BENCH_RESULTS_DIR (set by `rvma bench --out`), else bench/results under root. */
export function resultsDir(root: string): string {
  return process.env.RVMA_BENCH_RESULTS_DIR ? path.resolve(process.env.RVMA_BENCH_RESULTS_DIR) : path.join(root, 'bench', 'results');
}

/** A results file as printed: relative to root when under it. */
export function shownPath(root: string, file: string): string {
  const relative = path.relative(root, file);
  return relative.startsWith('..') ? file : relative;
}

/** Writes <resultsDir>/<bench>-<date>.json; returns the file written. */
export function saveResults(root: string, bench: string, run: RunRecord): string {
  const now = new Date();
  const stamp = now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
  const file = path.join(resultsDir(root), `${bench}-${stamp}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const cpus = os.cpus();
  const record = {
    date: now.toISOString(),
    revision: revision(root),
    machine: {
      cpus: cpus.length,
      model: cpus[0]?.model,
      node: process.version,
      kernel: `${os.type()} ${os.release()}`,
      loadavgBefore: run.loadBefore,
      loadavgAfter: os.loadavg(),
    },
    config: run.config,
    units: { rtt: 'µs per round trip (median of per-op times)', bw: 'MiB/s' },
    medians: run.report.medians,
    ratios: run.report.ratios,
    samples: run.samples,
    errors: run.errors,
    seconds: run.seconds,
    ...run.extra,
  };
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}
