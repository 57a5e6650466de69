// A replicated Redis for directory tests and benchmarks: a primary, a replica and three
// sentinels (redis-server in sentinel mode), on private ports, without persistence, in a temp dir. killPrimary() is a
// kill -9 of the current primary; the sentinels then promote the replica.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Redis from 'ioredis';
import { findRedisServer, freePort, ping } from './private-redis';
import { type ServerAt, ServerProcesses, askServer } from './server-set';

export const SENTINEL_NAME = 'rvma-primary';
/**
 * How long the sentinels wait before they call a silent primary down: long enough that a
 * primary slowed by a loaded machine is not failed over while alive (a failover of a live primary
 * loses the writes the replica had not received yet, as Redis replication is asynchronous).
 */
export const DOWN_AFTER_MS = 3000;
const START_TIMEOUT_MS = 10_000;

export interface SentinelSet {
  name: string;
  sentinels: { host: string; port: number }[];
  /** The primary's port as the sentinels name it now. */
  primaryPort(): Promise<number>;
  /** kill -9 of the current primary; returns its port. */
  killPrimary(): Promise<number>;
  /**
   * Waits until the replica has every write the primary took. Replication is asynchronous: a
   * failover loses what the replica had not received yet.
   */
  replicated(timeoutMs: number): Promise<void>;
  /** Waits until the sentinels name a primary other than `oldPort`; returns its port. */
  failedOver(oldPort: number, timeoutMs: number): Promise<number>;
  stop(): Promise<void>;
}

/** TLS for every process of a set: PEM files of the servers' certificate, its key and the CA that signed it. */
export interface SentinelTls {
  cert: string;
  key: string;
  ca: string;
}

/** The servers' own arguments for TLS only (no plain port), replication and sentinels' links included. */
function tlsArgs(tls: SentinelTls): string[] {
  return ['--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'no', '--tls-replication', 'yes'];
}

const ask = async (at: ServerAt, question: (c: Redis) => Promise<boolean>): Promise<boolean> => (await askServer(at, question)) ?? false;

/**
 * args: more redis-server arguments for every process of the set (e.g. ['--maxclients', '19968']).
 * tls: every process speaks TLS only, to clients and to each other.
 */
export async function startSentinels(options: { args?: string[]; tls?: SentinelTls } = {}): Promise<SentinelSet> {
  const binary = findRedisServer();
  if (!binary) throw new Error('startSentinels: redis-server is not installed');
  const servers = new ServerProcesses(binary, fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-sentinel-')));
  const { dir } = servers;
  const clientTls = options.tls ? { ca: fs.readFileSync(options.tls.ca) } : undefined;
  /** Where a short-lived client reaches a process of the set. */
  const at = (port: number): ServerAt => ({ host: '127.0.0.1', port, ...(clientTls ? { tls: clientTls } : {}) });
  const up = (port: number): Promise<boolean> => (clientTls ? ask(at(port), async (c) => (await c.ping()) === 'PONG') : ping(port, 200));
  const start = async (port: number, args: string[]): Promise<void> => {
    servers.start(port, [...args, ...(options.tls ? tlsArgs(options.tls) : []), ...(options.args ?? [])]);
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await up(port))) {
      if (Date.now() > deadline || !servers.running(port)) throw new Error(`redis on port ${port} did not start`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  // With TLS the port is TLS's alone.
  const listen = (port: number): string[] => (options.tls ? ['--port', '0', '--tls-port', String(port)] : ['--port', String(port)]);
  const server = (port: number, more: string[] = []): string[] => [
    ...listen(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
    '--dbfilename', `dump-${port}.rdb`, ...more,
  ];

  const stop = (): Promise<void> => servers.stop();

  try {
    const [primary, replica, ...sentinelPorts] = await Promise.all([0, 1, 2, 3, 4].map(() => freePort()));
    // No wait for more replicas before the first sync (Redis waits 5 s by default).
    await start(primary, server(primary, ['--repl-diskless-sync-delay', '0']));
    await start(replica, server(replica, ['--replicaof', '127.0.0.1', String(primary)]));
    for (const port of sentinelPorts) {
      const conf = path.join(dir, `sentinel-${port}.conf`);
      fs.writeFileSync(
        conf,
        [
          ...(options.tls ? ['port 0', `tls-port ${port}`] : [`port ${port}`]),
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_NAME} ${DOWN_AFTER_MS}`,
          // An election whose votes split is tried again after twice this: 8 s, not 20, so that
          // a failover with one failed election still ends well within the test's bound.
          `sentinel failover-timeout ${SENTINEL_NAME} 4000`,
          `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
          '',
        ].join('\n'),
      );
      await start(port, [conf, '--sentinel']);
    }
    const sentinels = sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));

    const primaryPort = async (): Promise<number> => {
      for (const s of sentinels) {
        const addr = await askServer(at(s.port), (c) => c.call('SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME) as Promise<[string, string] | null>);
        if (addr) return Number(addr[1]);
      }
      throw new Error('no sentinel names a primary');
    };
    // The replica must have synced (else a promotion starts empty), and every sentinel found it.
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const synced = await ask(at(primary), async (c) => /slave0:.*state=online/.test(await c.info('replication')));
      const seen = await Promise.all(
        sentinels.map((s) =>
          ask(at(s.port), async (c) => {
            const replicas = (await c.call('SENTINEL', 'replicas', SENTINEL_NAME)) as string[][];
            return replicas.length === 1 && replicas[0][replicas[0].indexOf('flags') + 1] === 'slave';
          }),
        ),
      );
      if (synced && seen.every(Boolean)) break;
      if (Date.now() > deadline) throw new Error(`the replica did not sync, or a sentinel did not see it (synced ${synced}, seen ${seen})`);
      await new Promise((r) => setTimeout(r, 100));
    }

    return {
      name: SENTINEL_NAME,
      sentinels,
      primaryPort,
      async killPrimary() {
        const port = await primaryPort();
        servers.kill(port);
        return port;
      },
      async replicated(timeoutMs) {
        const end = Date.now() + timeoutMs;
        const offset = (info: string, key: string): number => Number(new RegExp(`${key}:(\\d+)`).exec(info)?.[1] ?? -1);
        for (;;) {
          const port = await primaryPort();
          const primaryOffset = await askServer(at(port), (c) => c.info('replication').then((i) => offset(i, 'master_repl_offset')));
          const replicaOffset = await askServer(at(port === primary ? replica : primary), (c) =>
            c.info('replication').then((i) => offset(i, 'slave_repl_offset')),
          );
          if (primaryOffset !== undefined && primaryOffset > 0 && replicaOffset === primaryOffset) return;
          if (Date.now() > end) throw new Error(`the replica is behind: offset ${replicaOffset} of ${primaryOffset}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      },
      async failedOver(oldPort, timeoutMs) {
        const end = Date.now() + timeoutMs;
        for (;;) {
          const port = await primaryPort().catch(() => oldPort);
          if (port !== oldPort) return port;
          if (Date.now() > end) throw new Error(`no failover from port ${oldPort} within ${timeoutMs} ms`);
          await new Promise((r) => setTimeout(r, 100));
        }
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
