// `npm run soak`: a bounded soak run that proves nothing is lost. It starts 8 to 16 endpoint
// processes on this host (tcp and shm, loop and thread progress) doing many-to-one appends,
// rendezvous steps and a ring, injects seeded faults meanwhile, checks the invariants every
// minute and at the end, prints a one-screen summary and writes it as JSON. Exit status 0 when
// no invariant was violated, 1 otherwise (130 when interrupted). It stops by itself: the run's
// minutes plus a bounded grace, and it kills every process it started however it ends.
import { Command, InvalidArgumentError, Option } from 'commander';
import * as os from 'node:os';
import * as path from 'node:path';
import { type FinalChecks, finalCheck, minuteCheck } from './checks';
import { Cluster } from './cluster';
import { FAULT_KINDS, FaultInjector, type FaultKind } from './faults';
import { readProc } from './monitor';
import { type SoakOptions, TIMING } from './options';
import { killAllNow } from './supervisor';
import { saveSummary, summaryJson, summaryText } from './summary';

const ROOT = path.resolve(__dirname, '..', '..');

function number(min: number, max: number, integer: boolean) {
  return (text: string): number => {
    const v = Number(text);
    if (!Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
      throw new InvalidArgumentError(`needs ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    }
    return v;
  };
}

function faultList(text: string): FaultKind[] {
  if (text === 'none') return [];
  const kinds = text.split(',').map((k) => k.trim());
  for (const k of kinds) {
    if (!(FAULT_KINDS as readonly string[]).includes(k)) throw new InvalidArgumentError(`unknown fault kind "${k}" (known: ${FAULT_KINDS.join(', ')})`);
  }
  return kinds as FaultKind[];
}

function parse(argv: string[]): SoakOptions {
  const program = new Command('soak')
    .description('a bounded soak: many-to-one puts, rendezvous steps and a ring under seeded faults; checks that nothing is lost')
    .option('--minutes <n>', 'how long the workload runs (fractions allowed, e.g. 0.5)', number(0.1, 24 * 60, false), 10)
    .option('--seed <n>', 'seed of the fault schedule and victims (default: a new one, printed)', number(0, 2 ** 31 - 1, true))
    .option('--processes <n>', 'endpoint processes, 8 to 16', number(8, 16, true), 8)
    .option('--rate <n>', 'puts per second from each sender to each sink', number(1, 10_000, true), 100)
    .option('--nofile <n>', 'open-files limit of each endpoint process', number(64, 1_048_576, true), 1024)
    .option('--rss-limit <MiB>', 'memory bound of each process (RSS)', number(64, 65_536, true), 1024)
    .option('--hang-seconds <s>', 'no progress for this long is a hang', number(5, 3600, true), 30)
    .addOption(new Option('--ring-transport <t>', 'transport of the ring').choices(['tcp', 'shm']).default('shm'))
    .option('--faults <kinds>', `fault kinds to inject, comma-separated (default: all: ${FAULT_KINDS.join(',')}); 'none' for none`, faultList, [...FAULT_KINDS])
    .option('--out <dir>', 'directory for the JSON summary', path.join(ROOT, 'soak', 'results'))
    .parse(argv);
  const o = program.opts<{
    minutes: number;
    seed?: number;
    processes: number;
    rate: number;
    nofile: number;
    rssLimit: number;
    hangSeconds: number;
    ringTransport: 'tcp' | 'shm';
    faults: FaultKind[];
    out: string;
  }>();
  return {
    minutes: o.minutes,
    seed: o.seed ?? Math.floor(Math.random() * 2 ** 31),
    processes: o.processes,
    rate: o.rate,
    nofile: o.nofile,
    rssLimitMiB: o.rssLimit,
    hangSeconds: o.hangSeconds,
    ringTransport: o.ringTransport,
    faults: o.faults,
    out: path.resolve(o.out),
  };
}

async function main(): Promise<void> {
  const options = parse(process.argv);
  const started = Date.now();
  const durationMs = options.minutes * 60_000;
  const hardDeadline = started + durationMs + TIMING.graceMs;
  const say = (line: string): void => void process.stderr.write(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
  const cluster = new Cluster(options, started, hardDeadline, say);
  const injector = new FaultInjector(cluster, options.seed, options.faults as FaultKind[], say);
  const interrupt = new AbortController();
  let finishing = false;

  // However this process ends, nothing it started outlives it.
  process.on('exit', () => {
    killAllNow();
    cluster.redis?.killNow();
  });

  const finish = async (interrupted: string | undefined, checks?: FinalChecks, workSeconds?: number): Promise<never> => {
    if (finishing) {
      if (interrupted?.startsWith('SIG')) {
        killAllNow(); // a second Ctrl-C: out now
        process.exit(130);
      }
      return new Promise<never>(() => undefined); // the path that got here first finishes
    }
    finishing = true;
    const seconds = workSeconds ?? (cluster.workloadStart ? (Date.now() - cluster.workloadStart) / 1000 : 0);
    if (interrupted) {
      say(`stopping: ${interrupted}`);
      injector.stop();
      await Promise.race([cluster.abort(), sleepFor(15_000)]);
      checks = finalCheck(cluster, seconds, new Map(), false);
    }
    const input = { cluster, injector, checks: checks!, seconds, interrupted };
    const json = summaryJson(input);
    let file: string | undefined;
    try {
      file = saveSummary(options.out, json);
    } catch (error) {
      say(`could not write the results: ${(error as Error).message}`);
    }
    const shown = file && !path.relative(process.cwd(), file).startsWith('..') ? path.relative(process.cwd(), file) : file;
    console.log(summaryText(input, shown));
    process.exit(interrupted && interrupted.startsWith('SIG') ? 130 : cluster.findings.length || interrupted ? 1 : 0);
  };

  const giveUp = (why: string): void => {
    interrupt.abort();
    void finish(why);
  };
  process.on('uncaughtException', (error) => giveUp(`harness error: ${error.stack ?? error.message}`));
  process.on('unhandledRejection', (error) => giveUp(`harness error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => giveUp(signal));
  setTimeout(() => giveUp(`the hard deadline (${options.minutes} min + ${TIMING.graceMs / 1000} s grace) passed`), hardDeadline - Date.now());

  say(`seed ${options.seed}, ${options.processes} endpoint processes, ${options.minutes} min, ${os.cpus().length} CPUs; starting`);
  await cluster.start();
  say(`all ${cluster.roles.length} roles are up (${((cluster.workloadStart - started) / 1000).toFixed(1)} s); workload running`);
  const workStart = cluster.workloadStart;
  const minutes = setInterval(() => say(`minute ${Math.round(cluster.now() / 60)}: ${minuteCheck(cluster)}`), TIMING.checkEveryMs);

  await sleepFor(TIMING.warmupMs(options.minutes), interrupt.signal);
  const faults = options.faults.length ? injector.run(workStart + durationMs - TIMING.cooldownMs(options.minutes)) : Promise.resolve();
  await sleepFor(workStart + durationMs - Date.now(), interrupt.signal);
  injector.stop();
  await faults;
  clearInterval(minutes);
  if (interrupt.signal.aborted) return;

  // Settled: the descriptor counts now are what the processes hold when nothing is done to them.
  say('workload time is up; settling');
  await sleepFor(5000, interrupt.signal);
  if (interrupt.signal.aborted) return;
  const quietFds = new Map<string, number>();
  for (const r of cluster.roles) {
    const reading = r.pid === undefined ? undefined : readProc(r.pid);
    if (reading) quietFds.set(r.name, reading.fds);
  }
  say('stopping the roles');
  await cluster.stopAll();
  if (interrupt.signal.aborted) return;
  const seconds = durationMs / 1000;
  const checks = finalCheck(cluster, seconds, quietFds);
  await finish(undefined, checks, seconds);
}

function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

main().catch((error: Error) => {
  console.error(`soak failed: ${error.stack ?? error.message}`);
  killAllNow();
  process.exit(1);
});
