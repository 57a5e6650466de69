// `rvma bench <suite>`: runs a benchmark suite (dist/bench/<suite>/run.js, as the npm scripts
// do) as a child process, shows its progress, passes its output through, and plots the results
// files it wrote.
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { isProgressMessage } from './progress';
import { type Suite } from './bench-suites';
import { compiled, packageRoot } from './package-root';
import { ProgressBar } from './progress-bar';
import { writePlots } from './plot';
import { PlotUnavailable } from './plot/render';

export interface BenchOptions {
  /** Directory for the results JSON and plots. */
  out?: string;
  plot?: boolean;
  png?: boolean;
  progress?: boolean;
}

/** In a checkout the results go to its bench/results/ (as `npm run bench:*` always did), elsewhere to ./rvma-results. */
export function defaultResultsDir(): string {
  const root = packageRoot();
  return fs.existsSync(path.join(root, '.git')) ? path.join(root, 'bench', 'results') : path.resolve('rvma-results');
}

function resultsFiles(dir: string): Set<string> {
  try {
    return new Set(fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => path.join(dir, f)));
  } catch {
    return new Set();
  }
}

function follow(stream: NodeJS.ReadableStream, onLine: (line: string) => void): Promise<void> {
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  lines.on('line', onLine);
  return new Promise((resolve) => lines.once('close', resolve));
}

/** Runs the suite; resolves with the results files it wrote (plotted unless plot is false). */
export async function runBench(suite: Suite, args: string[], o: BenchOptions): Promise<string[]> {
  const script = compiled(suite.script());
  const out = path.resolve(o.out ?? defaultResultsDir());
  fs.mkdirSync(out, { recursive: true });
  const before = resultsFiles(out);
  const bar = new ProgressBar(o.progress !== false && Boolean(process.stdout.isTTY));
  const child = fork(script, args, {
    cwd: packageRoot(),
    env: { ...process.env, RVMA_BENCH_RESULTS_DIR: out, RVMA_BENCH_PROGRESS: '1' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.on('message', (message) => {
    if (isProgressMessage(message)) bar.update(message.rvmaProgress);
  });
  // Ctrl-C: the suite stops its own children on the way out; stop waiting for it no sooner.
  const interrupt = (): void => void child.kill('SIGINT');
  process.on('SIGINT', interrupt);
  const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  try {
    await Promise.all([
      follow(child.stdout!, (line) => bar.line(line)),
      follow(child.stderr!, (line) => bar.line(line, process.stderr)),
    ]);
    const status = await exited;
    bar.finish();
    if (status !== 0) process.exitCode = status;
  } finally {
    process.off('SIGINT', interrupt);
  }
  const written = [...resultsFiles(out)].filter((f) => !before.has(f)).sort();
  if (o.plot !== false) {
    try {
      for (const file of written) {
        for (const plot of await writePlots(file, { png: o.png })) console.log(`plot: ${plot}`);
      }
    } catch (error) {
      if (!(error instanceof PlotUnavailable)) throw error;
      console.error(`no plots: ${error.message}; or --no-plot`); // the results are written all the same
    }
  }
  return written;
}
