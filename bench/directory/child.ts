// One child process of bench:directory: a share of the simulated nodes, the resolvers or the
// watchers, each a RedisDirectory of its own (a directory holds one registration), driven by
// run.ts over IPC. Many processes, so that the nodes' clients are not one event loop.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { type DirectoryEvent, RedisDirectory } from '../../src';
import { median, quantile } from '../common/stats';
import { type Reply, type Request, type ResolveResult, type Seen, type Usage, type WatchStats, benchRecord } from './protocol';

/**
 * Connects and registrations in flight per process: 4 processes x 64 stay under Redis's
 * default accept backlog (tcp-backlog 511), so no SYN is dropped and retried a second later.
 */
const IN_FLIGHT = 64;

const directories: RedisDirectory[] = [];
let lost = 0;
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();

/** Runs work(0..count-1), `limit` at a time; rejects naming how many failed and the first error. */
async function pooled(what: string, count: number, limit: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = 0;
  let first: unknown;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      try {
        await work(i);
      } catch (error) {
        failed++;
        first ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  if (failed) throw new Error(`${what}: ${failed} of ${count} failed; the first: ${(first as Error)?.message ?? String(first)}`);
}

async function connect(req: Extract<Request, { cmd: 'connect' }>): Promise<number> {
  const start = directories.length;
  await pooled('connect', req.count, IN_FLIGHT, async (i) => {
    const directory = await RedisDirectory.connect({ ...req.target, namespace: req.namespace });
    directory.on('lost', () => lost++);
    directories[start + i] = directory;
  });
  return directories.length;
}

async function register(req: Extract<Request, { cmd: 'register' }>): Promise<void> {
  await pooled('register', directories.length, IN_FLIGHT, async (i) => {
    const n = req.first + i;
    await directories[i].register(benchRecord(`n${n}`, n));
    if (req.names) await directories[i].bindName(`name-n${n}`, BigInt(n + 1));
  });
}

async function resolve(req: Extract<Request, { cmd: 'resolve' }>): Promise<ResolveResult> {
  const began = performance.now();
  const measureFrom = began + req.warmupMs;
  const end = measureFrom + req.durationMs;
  const latencies: number[] = [];
  let misses = 0;
  const loop = async (directory: RedisDirectory): Promise<void> => {
    for (let now = performance.now(); now < end; ) {
      const id = `n${Math.floor(Math.random() * req.nodes)}`;
      const t0 = performance.now();
      const found = req.what === 'node' ? await directory.resolveNode(id) : await directory.resolveName(`name-${id}`);
      now = performance.now();
      if (t0 < measureFrom || now > end) continue;
      latencies.push((now - t0) * 1000);
      if (!found) misses++;
    }
  };
  await Promise.all(directories.map(loop));
  return {
    ops: latencies.length,
    seconds: req.durationMs / 1000,
    medianUs: median(latencies),
    p99Us: quantile(latencies, 0.99),
    misses,
  };
}

const seenBy = new Map<string, Set<number>>();
let duplicates = 0;
const others: Record<string, number> = {};

function watch(req: Extract<Request, { cmd: 'watch' }>): number {
  const observe = (watcher: number, event: DirectoryEvent): void => {
    const at = process.hrtime.bigint();
    if (!event.node.nodeId.startsWith(req.prefix)) {
      others[event.type] = (others[event.type] ?? 0) + 1;
      return;
    }
    const key = `${event.type} ${event.node.nodeId}`;
    const watchers = seenBy.get(key) ?? new Set<number>();
    seenBy.set(key, watchers);
    if (watchers.has(watcher)) {
      duplicates++;
      return;
    }
    watchers.add(watcher);
    if (watchers.size === directories.length) {
      process.send!({ seen: { type: event.type, nodeId: event.node.nodeId, lastNs: String(at) } } satisfies Seen);
    }
  };
  directories.forEach((directory, watcher) => {
    void (async () => {
      for await (const event of directory.watch()) observe(watcher, event);
    })();
  });
  return directories.length;
}

function usage(): Usage {
  const cpu = process.cpuUsage();
  return { cpuUs: cpu.user + cpu.system, lost, rssMiB: process.memoryUsage().rss / 2 ** 20, loopDelayMaxMs: loopDelay.max / 1e6 };
}

async function handle(req: Request): Promise<unknown> {
  switch (req.cmd) {
    case 'connect':
      return connect(req);
    case 'register':
      return register(req);
    case 'resolve':
      return resolve(req);
    case 'watch':
      return watch(req);
    case 'watchStats':
      return { duplicates, others, seenBy: Object.fromEntries([...seenBy].map(([k, v]) => [k, v.size])) } satisfies WatchStats;
    case 'usage':
      return usage();
    case 'exit':
      // Not closed one by one: run.ts stops the servers next, and 10,000 deregistrations would
      // only add to the run's time.
      setImmediate(() => process.exit(0));
      return null;
  }
}

process.on('disconnect', () => process.exit(0));
process.on('message', (req: Request) => {
  handle(req).then(
    (value) => process.send!({ id: req.id, ok: true, value: value ?? null } satisfies Reply),
    (error: unknown) => process.send!({ id: req.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies Reply),
  );
});
process.send!({ ready: true });
