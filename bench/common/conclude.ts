// The end of a benchmark run: the report printed, one summary line, the JSON record written.
import * as os from 'node:os';
import { buildReport, formatReport, type ReportSpec, type Samples } from './report';
import { type Failure, saveResults, shownPath } from './results';

/** When measuring began, and the machine's load then. */
export interface Clock {
  started: number;
  loadBefore: number[];
}

export function startClock(): Clock {
  return { started: Date.now(), loadBefore: os.loadavg() };
}

export interface Finished extends Clock {
  /** The repository root; results go to its bench/results/. */
  root: string;
  /** File name prefix: bench/results/<bench>-<date>.json. */
  bench: string;
  spec: ReportSpec;
  reps: number;
  samples: Samples;
  errors: Failure[];
  /** Settings worth keeping with the numbers. */
  config: Record<string, unknown>;
  extra?: Record<string, unknown>;
}

/** Prints and saves; returns the results file. A run with failed measurements exits non-zero. */
export function conclude(run: Finished): string {
  const report = buildReport(run.spec, run.samples);
  console.log('');
  console.log(formatReport(run.spec, run.samples, report, run.reps));
  const seconds = (Date.now() - run.started) / 1000;
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\n${run.errors.length} failed measurements; ${seconds.toFixed(1)} s (after the build); ` +
      `load average before ${load(run.loadBefore)}, after ${load(os.loadavg())}.`,
  );
  const file = saveResults(run.root, run.bench, {
    loadBefore: run.loadBefore,
    config: {
      repetitions: run.reps,
      subject: run.spec.subject,
      scenarios: run.spec.scenarios,
      variants: run.spec.variants,
      targets: run.spec.targets,
      ...run.config,
    },
    report,
    samples: run.samples,
    errors: run.errors,
    seconds,
    extra: run.extra,
  });
  console.log(`results: ${shownPath(run.root, file)}`);
  if (run.errors.length) process.exitCode = 1;
  return file;
}
