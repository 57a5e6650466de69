// The child-process side shared by every role: its configuration, reporting to the harness over
// IPC, a heartbeat with a progress counter (a role whose counter stops is a hang), typed-failure
// accounting, and exiting by itself when the harness goes away or the deadline passes.
import { Endpoint, type EndpointOptions, MemoryDirectory, MemoryDirectoryHub, RvmaError } from '../../src';
import type { FromRole, RoleConfig, Tally, ToRole } from '../protocol';

export const config: RoleConfig = JSON.parse(process.argv[2] ?? '{}') as RoleConfig;

export function report(message: FromRole): void {
  if (process.connected) process.send!(message);
}

/** The RvmaError code of an error, or undefined for anything else. */
export function codeOf(error: unknown): string | undefined {
  return error instanceof RvmaError ? error.code : undefined;
}

/**
 * Counts a failure by code and tells the harness. An error without an RvmaError code is a
 * violation: the library promises typed errors only.
 */
export function failure(area: string, error: unknown, stats?: Tally): string {
  const code = codeOf(error);
  if (code === undefined) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    report({ type: 'violation', check: 'typed-errors', detail: `${config.role} (${area}): untyped error ${text}` });
    return 'UNTYPED';
  }
  if (stats) stats[`failed.${code}`] = (stats[`failed.${code}`] ?? 0) + 1;
  report({ type: 'failure', area, code });
  return code;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const handlers: ((m: ToRole) => void)[] = [];
export function onCommand(handler: (m: ToRole) => void): void {
  handlers.push(handler);
}

let stopHandler: (() => Promise<void>) | undefined;
/** What the role does on 'stop': settle, report, close. Then the process exits. */
export function onStop(handler: () => Promise<void>): void {
  stopHandler = handler;
}

let progressOf: () => number = () => 0;
let statsOf: () => Tally = () => ({});
/** The heartbeat's progress counter (must grow while the role works) and stats. */
export function heartbeat(progress: () => number, stats: () => Tally): void {
  progressOf = progress;
  statsOf = stats;
}

let stopping = false;
export const isStopping = (): boolean => stopping;

/** Starts the reporting machinery; call first. */
export function startRole(): void {
  process.on('disconnect', () => process.exit(0)); // the harness is gone
  // Ctrl-C reaches the whole process group: the harness decides when its processes end.
  process.on('SIGINT', () => undefined);
  process.on('SIGHUP', () => undefined);
  const deadline = setTimeout(() => process.exit(0), Math.max(0, config.deadline - Date.now()));
  deadline.unref();
  setInterval(() => report({ type: 'beat', progress: progressOf(), stats: statsOf() }), 1000).unref();
  const fatal = (error: unknown): void => {
    report({ type: 'fatal', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    setTimeout(() => process.exit(1), 50);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
  process.on('message', (m: ToRole) => {
    if (m.type === 'stop') {
      if (stopping) return;
      stopping = true;
      void (stopHandler?.() ?? Promise.resolve())
        .catch(() => undefined)
        .finally(() => {
          report({ type: 'stopped', stats: statsOf() });
          setTimeout(() => process.exit(0), 50);
        });
      return;
    }
    if (m.type === 'gc') {
      (globalThis as { gc?: () => void }).gc?.();
      const usage = process.memoryUsage();
      report({ type: 'heap', id: m.id, heapUsed: usage.heapUsed, external: usage.external });
      return;
    }
    for (const h of handlers) h(m);
  });
}

/** The endpoint options every role shares: loopback tcp on its fixed port, its progress mode. */
export function endpointOptions(provider: 'auto' | 'tcp'): EndpointOptions {
  return {
    nodeId: config.nodeId,
    progress: config.progress,
    provider,
    listen: `tcp://127.0.0.1:${config.port}`,
  };
}

/**
 * An endpoint on a MemoryDirectory that the harness fills with the other roles' records
 * ('peers'), as a launcher does (docs/directory.md). Resolves once the first records came.
 */
export async function memoryEndpoint(provider: 'auto' | 'tcp', labels: string[] = []): Promise<{ endpoint: Endpoint; peers: Promise<void> }> {
  const hub = new MemoryDirectoryHub();
  const directory = new MemoryDirectory(hub);
  let seeded: () => void;
  const peers = new Promise<void>((resolve) => (seeded = resolve));
  onCommand((m) => {
    if (m.type !== 'peers') return;
    hub.add(m.records);
    seeded();
  });
  const endpoint = await Endpoint.create({ ...endpointOptions(provider), labels, directory });
  const record = await directory.resolveNode(endpoint.nodeId);
  report({ type: 'ready', nodeId: endpoint.nodeId, incarnationId: endpoint.incarnation, record });
  return { endpoint, peers };
}

/** A wait of the harness's own ran out: not a library error, so never counted as one. */
export class HarnessTimeout extends Error {
  override readonly name = 'HarnessTimeout';
}

/** A promise that settles after ms at the latest (for waits that take no timeout of their own). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new HarnessTimeout(`${what}: not within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
