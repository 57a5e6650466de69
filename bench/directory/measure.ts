// One deployment measured by bench:directory, phase by phase: N nodes connect and register,
// the servers' load while they only renew, resolvers in a closed loop, and watchers hearing
// nodes join and leave. Every wait is bounded; the deployment is stopped whatever happens.
import * as fs from 'node:fs';
import { RedisDirectory } from '../../src';
import { median } from '../common/stats';
import { DirectoryChild, SeenLog } from './children';
import { type Config, HEARTBEAT_MS } from './config';
import { type DeploymentId, type InfoFields, type Running, field, startDeployment } from './deployments';
import { type ResolveResult, type Usage, type WatchStats, benchRecord } from './protocol';

export const NAMESPACE = 'bench';
/** Joins and leaves are this far apart (at least). */
export const PACE_MS = 50;
/** How long, after the last join and leave, they may take to reach every watcher before they count as missed. */
const EVENT_LIMIT_MS = 15_000;
/** Nodes of the watch phase: the watchers report only their events. */
const WATCHED = 'w-';

export interface DeploymentRun {
  /** By metric id (metrics.ts); a figure not measured (a phase failed) is absent. */
  values: Record<string, number>;
  /** Seconds per phase. */
  phases: Record<string, number>;
  errors: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** The promise, or a rejection saying what did not finish within ms. */
function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** count split over parts as evenly as it goes. */
function shares(count: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(count / parts) + (i < count % parts ? 1 : 0));
}

/** A child's request bound: generous per item, for a machine with both cores busy. */
const perItem = (items: number): number => 30_000 + items * 20;

interface Sample {
  at: number;
  info: Map<number, InfoFields>;
}

async function sample(r: Running): Promise<Sample> {
  const infos = await Promise.all(r.ports.map((p) => r.info.read(p)));
  return { at: performance.now(), info: new Map(r.ports.map((p, i) => [p, infos[i]])) };
}

/** Per second between two samples, of a figure summed over `ports`. */
function rate(a: Sample, b: Sample, ports: number[], read: (i: InfoFields) => number): number {
  const sum = (s: Sample): number => ports.reduce((t, p) => t + read(s.info.get(p)!), 0);
  return (sum(b) - sum(a)) / ((b.at - a.at) / 1000);
}
const cpuSeconds = (i: InfoFields): number => field(i, 'used_cpu_sys') + field(i, 'used_cpu_user');

/** The children's CPU time, 'lost' events and RSS, summed. */
async function usage(children: DirectoryChild[]): Promise<{ at: number } & Usage> {
  const all = await Promise.all(children.map((c) => c.request<Usage>({ cmd: 'usage' }, 10_000)));
  const sum = (key: keyof Usage): number => all.reduce((t, u) => t + u[key], 0);
  return { at: performance.now(), cpuUs: sum('cpuUs'), lost: sum('lost'), rssMiB: sum('rssMiB'), loopDelayMaxMs: Math.max(...all.map((u) => u.loopDelayMaxMs)) };
}
const cpuPercent = (a: { at: number; cpuUs: number }, b: { at: number; cpuUs: number }): number => ((b.cpuUs - a.cpuUs) / 1000 / (b.at - a.at)) * 100;

/** The whole machine's CPU time, busy and all, from /proc/stat (in ticks); undefined off Linux. */
function machineTicks(): { busy: number; all: number } | undefined {
  try {
    const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
    const all = ticks.slice(0, 8).reduce((t, n) => t + n, 0);
    return { busy: all - ticks[3] - ticks[4], all }; // less idle and iowait
  } catch {
    return undefined;
  }
}

/** What every phase works with. */
interface Context {
  id: DeploymentId;
  c: Config;
  r: Running;
  values: Record<string, number>;
  errors: string[];
  log(text: string): void;
  /** Every child process started, to be stopped at the end. */
  children: DirectoryChild[];
  /** This process's directories, to be closed at the end. */
  own: RedisDirectory[];
}

async function startChildren(x: Context, count: number, label: string, onSeen?: SeenLog['add']): Promise<DirectoryChild[]> {
  const started = await Promise.all(Array.from({ length: count }, (_, i) => DirectoryChild.start(`${x.id} ${label} ${i + 1}/${count}`, onSeen)));
  x.children.push(...started);
  return started;
}

/** The nodes connect, then register; returns their processes and when registering began and ended. */
async function registration(x: Context, timed: <T>(phase: string, work: () => Promise<T>) => Promise<T>) {
  const { c, r, values } = x;
  const nodes = await startChildren(x, c.processes, 'nodes');
  const counts = shares(c.nodes, c.processes);
  const firsts = counts.map((_, i) => counts.slice(0, i).reduce((t, n) => t + n, 0));
  const [empty, before] = await Promise.all([sample(r), usage(nodes)]);
  await timed('connect', () =>
    Promise.all(nodes.map((child, i) => child.request({ cmd: 'connect', target: r.target, namespace: NAMESPACE, count: counts[i] }, perItem(counts[i])))),
  );
  const registering = performance.now();
  await timed('register', () => Promise.all(nodes.map((child, i) => child.request({ cmd: 'register', first: firsts[i], names: c.names }, perItem(counts[i])))));
  const registered = performance.now();
  values.connectRate = c.nodes / ((registering - empty.at) / 1000);
  values.registerSeconds = (registered - registering) / 1000;
  values.registerRate = c.nodes / values.registerSeconds;
  x.log(`connected ${c.nodes} directories in ${((registering - empty.at) / 1000).toFixed(1)} s, registered them in ${values.registerSeconds.toFixed(1)} s`);

  const full = await sample(r);
  const clients = (s: Sample, p: number): number => field(s.info.get(p)!, 'connected_clients');
  values.connectionsPerNode = r.ports.reduce((t, p) => t + clients(full, p) - clients(empty, p), 0) / c.nodes;
  const role = (p: number): string => (r.primaries.includes(p) ? 'primary' : full.info.get(p)!.get('redis_mode') === 'sentinel' ? 'sentinel' : 'replica');
  x.log(`connections per server: ${r.ports.map((p) => `${role(p)} ${clients(full, p)}`).join(', ')}`);
  const memory = (s: Sample): number => field(s.info.get(r.namespacePrimary)!, 'used_memory');
  values.usedMemoryMiB = memory(full) / 2 ** 20;
  values.memoryPerNode = (memory(full) - memory(empty)) / c.nodes;
  return { nodes, registering, registered, empty, full, rssBefore: before.rssMiB };
}

/**
 * The servers while the nodes only renew. Each node renews every period from when it
 * registered: a registration shorter than a period leaves the renewals bunched, and a window
 * must not start or end in a bunch. It starts half a period after the middle of the first
 * renewals, and lasts whole periods.
 */
async function renewal(x: Context, reg: Awaited<ReturnType<typeof registration>>): Promise<void> {
  const { c, r, values } = x;
  await sleep((reg.registering + reg.registered) / 2 + 1.5 * HEARTBEAT_MS - performance.now());
  const [s0, u0] = await Promise.all([sample(r), usage(reg.nodes)]);
  await sleep(s0.at + c.renewalSampleMs - performance.now());
  const [s1, u1] = await Promise.all([sample(r), usage(reg.nodes)]);
  const perThousand = 1000 / c.nodes;
  values.renewalCommands = rate(s0, s1, r.primaries, (i) => field(i, 'total_commands_processed')) * perThousand;
  values.renewalScripts = rate(s0, s1, r.primaries, (i) => field(i, 'cmdstat_eval')) * perThousand;
  values.renewalRedisCpu = rate(s0, s1, r.primaries, cpuSeconds) * 100;
  values.renewalAllCpu = rate(s0, s1, r.ports, cpuSeconds) * 100;
  values.renewalNodesCpu = cpuPercent(u0, u1);
  values.clientRssPerNode = ((u1.rssMiB - reg.rssBefore) * 1024) / c.nodes;
  // Memory again, once the servers have shrunk the buffers the registration burst left.
  const primary = (s: Sample): InfoFields => s.info.get(r.namespacePrimary)!;
  values.steadyMemoryMiB = field(primary(s1), 'used_memory') / 2 ** 20;
  values.dataPerNode = (field(primary(s1), 'used_memory_dataset') - field(primary(reg.empty), 'used_memory_dataset')) / c.nodes;
  const clientMemory = (s: Sample): number => r.ports.reduce((t, p) => t + field(s.info.get(p)!, 'mem_clients_normal'), 0);
  values.clientMemoryPerNode = (clientMemory(s1) - clientMemory(reg.empty)) / c.nodes;
  x.log(`renewal sampled over ${((s1.at - s0.at) / 1000).toFixed(1)} s`);
}

/** Resolvers in a closed loop over random registered nodes (and, with --names, their names). */
async function resolving(x: Context): Promise<void> {
  const { c, r, values } = x;
  const [resolver] = await startChildren(x, 1, 'resolvers');
  await resolver.request({ cmd: 'connect', target: r.target, namespace: NAMESPACE, count: c.resolvers }, perItem(c.resolvers));
  values.resolveMisses = 0;
  for (const what of c.names ? (['node', 'name'] as const) : (['node'] as const)) {
    const result = await resolver.request<ResolveResult>(
      { cmd: 'resolve', what, nodes: c.nodes, durationMs: c.resolveMs, warmupMs: c.warmupMs },
      c.resolveMs + c.warmupMs + 30_000,
    );
    const name = what === 'node' ? 'resolveNode' : 'resolveName';
    values[`${name}Rate`] = result.ops / result.seconds;
    values[`${name}Median`] = result.medianUs;
    values[`${name}P99`] = result.p99Us;
    values.resolveMisses += result.misses;
  }
  await resolver.stop();
}

/** Opens `count` directories in this process, 16 at a time; each is kept (to be closed) as soon as it is open. */
async function ownDirectories(x: Context, count: number): Promise<RedisDirectory[]> {
  const opened: RedisDirectory[] = [];
  for (let i = 0; i < count; i += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, count - i) }, async () => {
        const directory = await bounded(RedisDirectory.connect({ ...x.r.target, namespace: NAMESPACE }), 10_000, 'RedisDirectory.connect');
        x.own.push(directory);
        opened.push(directory);
      }),
    );
  }
  return opened;
}

/**
 * A watch subscribes in the background: probe nodes join (a new one every 3 s) until every
 * watcher heard one of them; events reach a watcher in order, so it then hears all that follow.
 */
async function untilSubscribed(probe: RedisDirectory, seen: SeenLog, firstIndex: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    await bounded(probe.register(benchRecord(`${WATCHED}probe${attempt}`, firstIndex + attempt)), 10_000, 'register (probe)');
    const heard = (): boolean => Array.from({ length: attempt + 1 }, (_, j) => seen.heardByAll(`join ${WATCHED}probe${j}`)).some(Boolean);
    for (let waited = 0; waited < 3000 && !heard(); waited += 50) await sleep(50);
    await bounded(probe.deregister(), 10_000, 'deregister (probe)');
    if (heard()) return;
    if (attempt === 19) throw new Error('the watchers did not all hear a probe join within 60 s');
  }
}

/**
 * Joins (then leaves) of `directories.length` nodes, one every PACE_MS, each timed on its own
 * from its register() or deregister() resolving: waiting for each to reach every watcher, or
 * even for the call to resolve, would make the phase as long as a loaded machine is slow.
 * Returns when each call resolved (process.hrtime.bigint()), by event.
 */
async function send(type: 'join' | 'leave', directories: RedisDirectory[], firstIndex: number): Promise<Map<string, bigint>> {
  const done = new Map<string, bigint>();
  let failed: unknown;
  const calls: Promise<void>[] = [];
  for (const [i, directory] of directories.entries()) {
    const nodeId = `${WATCHED}x${i}`;
    const call = type === 'join' ? directory.register(benchRecord(nodeId, firstIndex + i)) : directory.deregister();
    calls.push(
      bounded(call, 10_000, type === 'join' ? 'register' : 'deregister').then(
        () => void done.set(`${type} ${nodeId}`, process.hrtime.bigint()),
        (error: unknown) => void (failed ??= error),
      ),
    );
    await sleep(PACE_MS);
  }
  await Promise.all(calls);
  if (failed) throw failed;
  return done;
}

/** Watchers: their load while idle, how long joins and leaves take to reach them all, and whether every one arrived once. */
async function watching(x: Context): Promise<void> {
  const { c, r, values } = x;
  // Connected before the watchers start, which load the machine.
  const joining = await ownDirectories(x, c.joins + 1);
  const probe = joining.pop()!;
  const seen = new SeenLog(c.watcherProcesses);
  const perProcess = shares(c.watchers, c.watcherProcesses);
  const watchers = await startChildren(x, c.watcherProcesses, 'watchers', seen.add);
  await Promise.all(watchers.map((w, i) => w.request({ cmd: 'connect', target: r.target, namespace: NAMESPACE, count: perProcess[i] }, perItem(perProcess[i]))));
  await Promise.all(watchers.map((w) => w.request({ cmd: 'watch', prefix: WATCHED }, 10_000)));
  const subscribing = performance.now();
  await untilSubscribed(probe, seen, c.nodes + c.joins);
  x.log(`${c.watchers} watchers heard a join ${((performance.now() - subscribing) / 1000).toFixed(1)} s after their watch() began`);

  const [s0, u0, m0] = await Promise.all([sample(r), usage(watchers), machineTicks()]);
  await sleep(c.idleWatchMs);
  const [s1, u1, m1] = await Promise.all([sample(r), usage(watchers), machineTicks()]);
  values.watchIdleRedisCpu = rate(s0, s1, r.ports, cpuSeconds) * 100;
  values.watchIdleClientCpu = cpuPercent(u0, u1);
  // list() is the only MGET of the directory (listNames aside): one per comparison made.
  values.watchComparisons = rate(s0, s1, r.primaries, (i) => field(i, 'cmdstat_mget'));
  if (m0 && m1) values.watchIdleMachineBusy = ((m1.busy - m0.busy) / (m1.all - m0.all)) * 100;

  const sending = performance.now();
  const done = new Map([...(await send('join', joining, c.nodes)), ...(await send('leave', joining, c.nodes))]);
  x.log(`${c.joins} joins and ${c.joins} leaves sent in ${((performance.now() - sending) / 1000).toFixed(1)} s`);
  const deadline = performance.now() + EVENT_LIMIT_MS;
  const latencies = async (type: 'join' | 'leave'): Promise<number[]> => {
    const ms: number[] = [];
    for (let i = 0; i < c.joins; i++) {
      const key = `${type} ${WATCHED}x${i}`;
      const last = await seen.seenByAll(key, deadline - performance.now());
      if (last !== undefined) ms.push(Number(last - done.get(key)!) / 1e6);
    }
    return ms;
  };
  const joins = await latencies('join');
  const leaves = await latencies('leave');
  values.joinMedian = median(joins);
  values.joinMax = joins.length ? Math.max(...joins) : NaN;
  values.leaveMedian = median(leaves);
  values.leaveMax = leaves.length ? Math.max(...leaves) : NaN;

  // Every watcher saw every join and leave once.
  const stats = await Promise.all(watchers.map((w) => w.request<WatchStats>({ cmd: 'watchStats' }, 10_000)));
  let missed = 0;
  stats.forEach((s, p) => {
    for (let i = 0; i < c.joins; i++) for (const type of ['join', 'leave']) missed += perProcess[p] - (s.seenBy[`${type} ${WATCHED}x${i}`] ?? 0);
  });
  const doubled = stats.reduce((t, s) => t + s.duplicates, 0);
  const others: Record<string, number> = {};
  for (const s of stats) for (const [type, n] of Object.entries(s.others)) others[type] = (others[type] ?? 0) + n;
  values.watchMissed = missed + doubled;
  if (missed || doubled) x.errors.push(`watch: of ${c.joins} joins and ${c.joins} leaves x ${c.watchers} watchers, ${missed} not seen and ${doubled} seen twice`);
  values.watchUnexpected = Object.values(others).reduce((t, n) => t + n, 0);
  const shown = Object.entries(others).map(([type, n]) => `${n} ${type}`);
  if (shown.length) x.log(`the watchers saw events of the ${c.nodes} nodes registered before they began: ${shown.join(', ')}`);
}

export async function measure(id: DeploymentId, c: Config, serverArgs: string[]): Promise<DeploymentRun> {
  const values: Record<string, number> = {};
  const phases: Record<string, number> = {};
  const errors: string[] = [];
  const began = performance.now();
  const timed = async <T>(phase: string, work: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await work();
    } finally {
      phases[phase] = (performance.now() - t0) / 1000;
    }
  };
  const log = (text: string): void => console.log(`  [${id}] ${text}`);
  const children: DirectoryChild[] = [];
  const own: RedisDirectory[] = [];
  let running: Running | undefined;
  try {
    const r = (running = await timed('start', () => startDeployment(id, NAMESPACE, serverArgs)));
    log(`started in ${phases.start.toFixed(1)} s: ${r.ports.length} servers, primaries on ports ${r.primaries.join(', ')}`);
    const x: Context = { id, c, r, values, errors, log, children, own };
    const reg = await registration(x, timed);
    await timed('renewal', () => renewal(x, reg));
    await timed('resolve', () => resolving(x));
    await timed('watch', () => watching(x));
    log(`resolve ${phases.resolve.toFixed(1)} s, watch ${phases.watch.toFixed(1)} s`);
    const [end, endUsage] = await Promise.all([sample(r), usage(reg.nodes)]);
    values.leasesLost = endUsage.lost;
    values.nodesLoopDelayMax = endUsage.loopDelayMaxMs;
    // A node key expires only when its lease lapsed (deregistering deletes it): a node renewing
    // too late to hold it. The directory then registers it again, unnoticed but by watchers.
    values.keysExpired = r.primaries.reduce((t, p) => t + field(end.info.get(p)!, 'expired_keys') - field(reg.full.info.get(p)!, 'expired_keys'), 0);
    if (values.leasesLost) errors.push(`${values.leasesLost} of the ${c.nodes} nodes lost their registration ('lost' events)`);
    // Nodes present when a watch begins are known without events; while their leases hold, none follow.
    if (values.watchUnexpected && !values.keysExpired) {
      errors.push(`watch: ${values.watchUnexpected} events of nodes registered before the watch began, though no lease lapsed`);
    }
    if (values.keysExpired) log(`${values.keysExpired} keys expired: leases lapsed (nodes' event loops were up to ${values.nodesLoopDelayMax.toFixed(0)} ms late)`);
  } catch (error) {
    errors.push((error instanceof Error ? error.message : String(error)).split('\n')[0]);
  } finally {
    await timed('stop', async () => {
      await Promise.all(children.map((child) => child.stop()));
      await bounded(Promise.all(own.map((d) => d.close())), 10_000, "closing this process's directories").catch(() => undefined);
      await running?.stop();
    });
  }
  values.seconds = (performance.now() - began) / 1000;
  return { values, phases, errors };
}
