// npm run bench:directory [-- --quick] [--nodes N] [--deployments single,sentinel,cluster] [--reps R]
// [--names] [--watchers W] [--out DIR]: the Redis directory at scale on one server, Sentinel and Cluster side by
// side: registering N nodes, resolving, watch fan-out and the servers' load from lease renewal.
// One table (medians over the repetitions), saved to bench/results/directory-<date>.json.
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { findRedisServer } from '../../support/private-redis';
import { option } from '../common/args';
import { boundedRun } from '../common/bounded-run';
import { rotated } from '../common/repeat';
import { type Failure, saveResults, shownPath } from '../common/results';
import { fixed, median, table } from '../common/stats';
import { HEARTBEAT_MS, TTL_MS, WATCH_INTERVAL_MS, readConfig } from './config';
import { openFilesLimit } from './deployments';
import { PACE_MS, measure } from './measure';
import { metrics } from './metrics';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const RUN_LIMIT_MS = 20 * 60_000;

function redisVersion(): string {
  const binary = findRedisServer();
  if (!binary) return 'not installed';
  try {
    return /v=(\S+)/.exec(execFileSync(binary, ['--version']).toString())?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const loadBefore = os.loadavg();
  const c = readConfig();
  const out = option('--out');
  if (out) process.env.RVMA_BENCH_RESULTS_DIR = out;
  const files = openFilesLimit();
  // Redis allows a client per open file it may have, less 32 for itself. Its default, 10000,
  // would turn away the last of 10,000 nodes (and the watchers and resolvers): every node holds a
  // connection to the primary, and through Sentinel one to every sentinel as well.
  const maxclients = Math.max(10_000, (files ?? 10_032) - 32);
  if (c.nodes + c.watchers * 2 + c.joins + c.resolvers + 100 > maxclients) {
    console.log(`warning: ${c.nodes} nodes need more connections per server than maxclients ${maxclients} (open files ${files}): raise ulimit -n`);
  }
  const serverArgs = ['--maxclients', String(maxclients)];
  const cpus = os.cpus();
  const machine = `${cpus.length} CPUs (${cpus[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, Redis ${redisVersion()}, open files ${files ?? 'unknown'}, maxclients ${maxclients}`;
  console.log(machine);
  console.log(
    `${c.nodes} nodes in ${c.processes} processes; ${c.resolvers} resolvers; ${c.watchers} watchers in ${c.watcherProcesses} processes, ${c.joins} nodes joining and leaving; ` +
      `${c.reps} repetition${c.reps > 1 ? 's' : ''}${c.quick ? ' (--quick)' : ''}`,
  );

  const list = metrics(c);
  const samples: Record<string, Record<string, number[]>> = {};
  const phases: Record<string, Record<string, number>[]> = {};
  const failures: Failure[] = [];
  for (const d of c.deployments) {
    samples[d.id] = {};
    phases[d.id] = [];
  }
  for (let rep = 0; rep < c.reps; rep++) {
    for (const d of rotated(c.deployments, rep)) {
      console.log(`${d.label}${c.reps > 1 ? `, repetition ${rep + 1}/${c.reps}` : ''}:`);
      const run = await measure(d.id, c, serverArgs);
      for (const [metric, value] of Object.entries(run.values)) (samples[d.id][metric] ??= []).push(value);
      phases[d.id].push(run.phases);
      for (const error of run.errors) {
        console.log(`  [${d.id}] FAILED: ${error}`);
        failures.push({ variant: d.id, scenario: 'directory', repetition: rep, error });
      }
      const shown = Object.entries(run.phases).map(([name, s]) => `${name} ${s.toFixed(1)}`).join(', ');
      console.log(`  [${d.id}] ${run.values.seconds.toFixed(1)} s: ${shown}`);
    }
  }

  const cell = (values: number[] | undefined, digits: number): string => {
    if (!values?.length) return '-';
    if (values.length === 1) return fixed(values[0], digits);
    return `${fixed(median(values), digits)} [${fixed(Math.min(...values), digits)}..${fixed(Math.max(...values), digits)}]`;
  };
  const rows = list.map((m) => [m.label, ...c.deployments.map((d) => cell(samples[d.id][m.id], m.digits))]);
  const seconds = (Date.now() - started) / 1000;
  console.log('');
  console.log(
    `${c.reps > 1 ? `Medians of ${c.reps} repetitions [min..max]` : 'One repetition (--reps R for medians)'}; ` +
      `${c.nodes} nodes, each its own RedisDirectory, in ${c.processes} processes, 64 connects or registrations in flight in each.`,
  );
  console.log(table([['', ...c.deployments.map((d) => d.label)], ...rows]));
  console.log(
    [
      `The directory's defaults throughout: ttlMs ${TTL_MS}, a renewal every ${HEARTBEAT_MS} ms, watchers comparing the member list every ${WATCH_INTERVAL_MS} ms.`,
      `renewal: INFO of the primaries (Cluster: all 3 summed) over ${((c.renewalSampleMs / HEARTBEAT_MS) | 0)} renewal periods once every node has renewed; ` +
        `commands count the scripts' own (a renewal is EVAL, GET, PEXPIRE, SMEMBERS${c.names ? ', and with a name two PEXPIREs more' : ''}). CPU % is of one core.`,
      `resolve: ${c.resolvers} directories in one process, one resolve each at a time, random registered nodes, ${c.resolveMs / 1000} s after ${c.warmupMs / 1000} s untimed.`,
      `watch: ${c.watchers} directories watching, in ${c.watcherProcesses} processes; ${c.joins} nodes register from this process, one every ${PACE_MS} ms, then deregister; ` +
        'from register()/deregister() resolving to the last watcher\'s event (process.hrtime, one clock for every process).',
      `Servers: --maxclients ${maxclients}; Cluster: 3 primaries, 3 replicas; Sentinel: a primary, a replica, 3 sentinels.`,
    ].join('\n'),
  );
  for (const d of c.deployments) {
    const m = (id: string): number => median(samples[d.id][id] ?? []);
    const comparisons = m('watchComparisons');
    // The renewals go on while the watchers watch: what Redis does beyond them is the watchers'.
    const redisMs = ((m('watchIdleRedisCpu') - m('renewalAllCpu')) / 100 / comparisons) * 1000;
    const watcherMs = (m('watchIdleClientCpu') / 100 / comparisons) * 1000;
    if (!Number.isFinite(watcherMs)) continue;
    const busy = m('watchIdleMachineBusy');
    console.log(
      `${d.label}: a watcher's comparison of ${c.nodes} records costs Redis ${fixed(redisMs, 1)} ms and the watcher ${fixed(watcherMs, 1)} ms of CPU ` +
        `(${fixed(comparisons, 1)} comparisons/s made of the ${fixed((c.watchers * 1000) / WATCH_INTERVAL_MS, 1)} due)` +
        (busy > 90 ? `; the machine was ${fixed(busy, 0)}% busy meanwhile: the join and leave times are a saturated machine's.` : '.'),
    );
  }
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  console.log(`\n${failures.length} failures; ${seconds.toFixed(1)} s (after the build); ${machine}; load average before ${load(loadBefore)}, after ${load(os.loadavg())}.`);

  const medians: Record<string, Record<string, number>> = {};
  for (const d of c.deployments) {
    medians[d.id] = {};
    for (const m of list) medians[d.id][m.id] = median(samples[d.id][m.id] ?? []);
  }
  const file = saveResults(ROOT, 'directory', {
    loadBefore,
    config: {
      repetitions: c.reps,
      quick: c.quick,
      nodes: c.nodes,
      processes: c.processes,
      resolvers: c.resolvers,
      resolveMs: c.resolveMs,
      names: c.names,
      watchers: c.watchers,
      joins: c.joins,
      ttlMs: TTL_MS,
      heartbeatMs: HEARTBEAT_MS,
      maxclients,
      scenarios: list.map(({ id, label }) => ({ id, label })),
      variants: c.deployments.map(({ id, label }) => ({ id, label })),
    },
    report: { medians, ratios: [] },
    samples: {},
    errors: failures,
    seconds,
    extra: {
      units: Object.fromEntries(list.map((m) => [m.id, m.unit])),
      values: samples,
      phases,
      redis: redisVersion(),
      openFiles: files,
    },
  });
  console.log(`results: ${shownPath(ROOT, file)}`);
  if (failures.length) process.exitCode = 1;
}

boundedRun('bench:directory', main, RUN_LIMIT_MS);
