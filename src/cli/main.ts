#!/usr/bin/env node
// The `rvma` command: what this machine offers (info), the benchmarks with plots (bench, plot),
// a Redis directory's live nodes (directory), measurements between two machines (perf) and the
// demos (demo).
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { parseSizes } from './sizes';
import { RvmaError } from '../base/errors';
import { action } from './action';
import { SUITES, type Suite, type SuiteIds, type SuiteOption, suiteArguments } from './bench-suites';
import { packageVersion } from './package-root';

function nonNegativeInteger(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('needs an integer of 0 or more');
  return n;
}

function positiveInteger(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('needs a positive integer');
  return n;
}

function sizeList(text: string): number[] {
  try {
    return parseSizes(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** The exit status of a usage error (a bad command, option or value), as for most commands. */
const USAGE = 2;

/** A suite's option as commander takes it: counts checked, ids checked against the suite's own. */
function suiteOption(suite: Suite, o: SuiteOption): Option {
  const option = new Option(o.flags, o.description);
  const [long, argument] = o.flags.split(' ');
  if (argument === '<n>') option.argParser(positiveInteger);
  if (argument === '<count>') option.argParser(nonNegativeInteger);
  if (argument === '<list>') {
    option.argParser((text: string) => {
      try {
        parseSizes(text);
      } catch (error) {
        throw new InvalidArgumentError((error as Error).message);
      }
      return text;
    });
  }
  if (argument === '<ids>') {
    const key = long.slice(2) as keyof SuiteIds;
    option.argParser((text: string) => {
      const known = suite.ids()[key] ?? [];
      const unknown = text.split(',').filter((id) => !known.includes(id));
      if (unknown.length) throw new InvalidArgumentError(`unknown ${unknown.join(', ')} (known: ${known.join(', ')})`);
      return text;
    });
  }
  return option;
}

/** The ids each id option takes, below the options in --help (read only when help is shown). */
function idsHelp(suite: Suite): string {
  const ids = suite.ids();
  const lines = (Object.keys(ids) as (keyof SuiteIds)[]).map((key) => `  --${key}: ${ids[key]!.join(', ')}`);
  return lines.length ? `\nIds (each option's default: all of them):\n${lines.join('\n')}` : '';
}

function addInfo(program: Command): void {
  program
    .command('info')
    .description('what this build contains and what this machine offers: providers (each probed with a put), RDMA devices, limits')
    .option('--json', 'print JSON')
    .action(
      action('info', async (o: { json?: boolean }) => {
        const { formatInfo, gatherInfo } = await import('./info');
        const info = await gatherInfo();
        console.log(o.json ? JSON.stringify(info, null, 2) : formatInfo(info));
      }),
    );
}

function addBench(program: Command): void {
  const bench = program
    .command('bench')
    .description('run a benchmark suite: progress bar, the table, results JSON and plots (SVG, PNG)');
  for (const suite of SUITES) {
    const command = bench.command(suite.name).description(suite.description);
    for (const option of suite.options) command.addOption(suiteOption(suite, option));
    command.addHelpText('after', () => idsHelp(suite));
    command
      .option('--out <dir>', 'directory for the results and plots (default: bench/results in a checkout, else ./rvma-results)')
      .option('--no-plot', 'write no plots')
      .option('--no-png', 'plots as SVG only')
      .option('--no-progress', 'no progress bar (there is none without a terminal)')
      .action(
        action(`bench ${suite.name}`, async (o: Record<string, unknown>) => {
          const { runBench } = await import('./bench');
          const out = o.out as string | undefined;
          if (out !== undefined && suite.script().endsWith('host.js')) {
            throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', "--out: the Soft-RoCE guest writes its results into the checkout's bench/results");
          }
          await runBench(suite, suiteArguments(suite, o), { out, plot: o.plot as boolean, png: o.png as boolean, progress: o.progress as boolean });
        }),
      );
  }
}

function addPlot(program: Command): void {
  program
    .command('plot')
    .description('plot saved benchmark results (bench/results/*.json) as SVG and PNG')
    .argument('<results...>', 'results JSON files')
    .option('--out <dir>', 'directory for the plots (default: beside each results file)')
    .option('--no-png', 'SVG only')
    .action(
      action('plot', async (files: string[], o: { out?: string; png: boolean }) => {
        const { writePlots } = await import('./plot');
        for (const file of files) for (const plot of await writePlots(file, { outDir: o.out, png: o.png })) console.log(plot);
      }),
    );
}

function addDirectory(program: Command): void {
  const directory = program.command('directory').description("a Redis directory's live nodes");
  const common = (command: Command): Command =>
    command
      .option('--redis <url>', 'redis://[USER:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS (default: REDIS_URL, else redis://127.0.0.1:6379)')
      .option('--tls-ca <file>', "the CA certificate that signed a rediss:// server's")
      .option('--namespace <name>', 'the namespace the nodes registered under (default: default)')
      .addOption(new Option('--cluster <name>', 'the former name of --namespace').hideHelp())
      .option('--cluster-nodes <list>', 'a Redis Cluster instead of --redis: some of its nodes, as HOST:PORT,HOST:PORT')
      .option('--connect-timeout <ms>', 'how long connecting may take', positiveInteger, 2000)
      .option('--json', 'print JSON (watch: one object per line)');
  common(directory.command('ls').description('the live nodes: incarnations, addresses, labels and bound names')).action(
    action('directory ls', async (o) => {
      const { directoryLs } = await import('./directory');
      await directoryLs(o);
    }),
  );
  common(directory.command('watch').description('the live nodes, then joins, updates and leaves as they happen (Ctrl-C ends)')).action(
    action('directory watch', async (o) => {
      const { directoryWatch } = await import('./directory');
      const stop = new AbortController();
      const end = (): void => stop.abort();
      process.once('SIGINT', end);
      process.once('SIGTERM', end);
      try {
        await directoryWatch(o, stop.signal);
      } finally {
        process.off('SIGINT', end);
        process.off('SIGTERM', end);
      }
    }),
  );
}

function addPerf(program: Command): void {
  program
    .command('perf')
    .argument('[address]', "the server's address (tcp://HOST:PORT, rdma://IP:PORT, shm://NAME)")
    .description('put latency, bandwidth, message rate and raw writes between two machines (like ucx_perftest): --server on one, the address on the other')
    .option('--server', 'serve perf clients (until Ctrl-C)')
    .option('--listen <address>', 'with --server: where to listen (default tcp://0.0.0.0:18515)')
    .option('--once', 'with --server: stop after the first client')
    .addOption(new Option('--provider <name>', 'the transport').choices(['auto', 'tcp', 'shm', 'verbs']).default('auto'))
    .option('--thread', 'progress on a thread of its own (default: on the event loop)')
    .option('-t, --tests <list>', 'comma-separated: lat, bw, rate, raw', 'lat,bw,rate,raw')
    .addOption(new Option('-s, --size <list>', 'message sizes, e.g. 8,64k,1m').argParser(sizeList).default([8, 65536, 1 << 20], '8,64k,1m'))
    .option('-n, --iterations <n>', 'timed puts per test and size', positiveInteger, 1000)
    .option('-w, --warmup <count>', 'untimed puts first', nonNegativeInteger, 100)
    .option('-O, --window <n>', 'puts in flight (bw, rate, raw)', positiveInteger, 16)
    .option('--timeout <ms>', 'bound on every wait for the server', positiveInteger, 30_000)
    .option('--json', 'print the results as JSON')
    .option('--out <dir>', 'also write the results JSON there')
    .option('--no-progress', 'no progress bar (there is none without a terminal)')
    .action(
      action('perf', async (address: string | undefined, o) => {
        const { runPerf } = await import('./perf/run');
        await runPerf(address, o);
      }),
    );
}

function addDemo(program: Command): void {
  program
    .command('demo')
    .description('run a demo on this machine: rendezvous (tensor exchange between workers) or pipeline (ring inference)')
    .addArgument(program.createArgument('[name]', 'which demo').choices(['rendezvous', 'pipeline']).default('rendezvous'))
    .option('--workers <n>', 'worker processes', positiveInteger)
    .option('--steps <n>', 'rendezvous: steps', positiveInteger)
    .option('--tokens <n>', 'pipeline: tokens to generate', positiveInteger)
    .addOption(new Option('--transport <name>', 'pipeline: the ring transport').choices(['shm', 'tcp']))
    .addOption(new Option('--model <size>', 'pipeline: the model').choices(['default', 'tiny']))
    .option('--redis <url>', 'rendezvous: a Redis directory instead of the embedded one')
    .action(
      action('demo', async (name: string, o) => {
        const { runDemo } = await import('./demo');
        await runDemo(name, o);
      }),
    );
}

export function program(): Command {
  const rvma = new Command('rvma')
    .description('RVMA mailboxes over RDMA-style transports: machine info, benchmarks, directory, demos')
    .version(packageVersion())
    // A usage error is one line and status 2 (see the catch below), not the whole help.
    .exitOverride();
  addInfo(rvma);
  addBench(rvma);
  addPlot(rvma);
  addDirectory(rvma);
  addPerf(rvma);
  addDemo(rvma);
  return rvma;
}

if (require.main === module) {
  program()
    .parseAsync(process.argv)
    .catch((error: unknown) => {
      // commander printed its message already; --help and --version end with status 0.
      if (error instanceof CommanderError) {
        process.exitCode = error.exitCode === 0 ? 0 : USAGE;
        return;
      }
      process.stderr.write(`rvma: ${(error as Error).message}\n`);
      process.exitCode = 1;
    });
}
