// A sharded Redis for directory tests and benchmarks: a cluster of 3 primaries and 3 replicas
// (redis-server with --cluster-enabled, joined by `redis-cli --cluster create`), on private
// ports, without persistence, in a temp dir. killPrimaryOf(slot) is a kill -9 of the primary serving a slot;
// its replica is then promoted. moveSlots() reshards with `redis-cli --cluster reshard`.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type Redis from 'ioredis';
import { findRedisServer, freePort, ping } from './private-redis';
import { ServerProcesses, askServer } from './server-set';

const run = promisify(execFile);
const START_TIMEOUT_MS = 20_000;
/** How long a primary may be silent before the others fail it over (cluster-node-timeout). */
export const NODE_TIMEOUT_MS = 2000;

export interface ClusterSet {
  /** Every node, primaries and replicas: what a client is given to start from. */
  nodes: { host: string; port: number }[];
  /** The hash slot of a key. */
  slotOf(key: string): Promise<number>;
  /** The port of the primary serving `slot` now. */
  primaryOf(slot: number): Promise<number>;
  /** Waits until the replicas of the primary serving `slot` have every write it took. */
  replicated(slot: number, timeoutMs: number): Promise<void>;
  /** kill -9 of the primary serving `slot`; returns its port. */
  killPrimaryOf(slot: number): Promise<number>;
  /** Waits until a live node other than `oldPort` serves `slot` and the cluster is whole again; returns its port. */
  failedOver(slot: number, oldPort: number, timeoutMs: number): Promise<number>;
  /** Moves every slot of the primary serving `slot` to another primary (`redis-cli --cluster reshard`); returns that primary's port. */
  moveSlotsOf(slot: number): Promise<number>;
  stop(): Promise<void>;
}

/** A node of the set, asked once. */
const read = <T>(port: number, question: (c: Redis) => Promise<T>): Promise<T | undefined> => askServer({ host: '127.0.0.1', port }, question);

interface NodeLine {
  id: string;
  port: number;
  primary: boolean;
  alive: boolean;
  /** For a replica: its primary's id. */
  primaryId: string;
  slots: [number, number][];
}

/** CLUSTER NODES as one node sees it. */
function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, addr, flags, primaryId, , , , , ...slots] = line.split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(addr)?.[1] ?? 0),
        primary: flags.includes('master'),
        alive: !flags.includes('fail') && !flags.includes('noaddr'),
        primaryId,
        slots: slots.filter((s) => !s.startsWith('[')).map((s) => {
          const [a, b] = s.split('-').map(Number);
          return [a, b ?? a] as [number, number];
        }),
      };
    });
}

/** args: more redis-server arguments for every node (e.g. ['--maxclients', '19968']). */
export async function startCluster(options: { args?: string[] } = {}): Promise<ClusterSet> {
  const binary = findRedisServer();
  if (!binary) throw new Error('startCluster: redis-server is not installed');
  const cli = path.join(path.dirname(binary), 'redis-cli');
  const servers = new ServerProcesses(binary, fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-cluster-')));
  const { dir } = servers;
  const stop = (): Promise<void> => servers.stop();

  try {
    const ports = await Promise.all([0, 1, 2, 3, 4, 5].map(() => freePort()));
    for (const port of ports) {
      const args = [
        '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
        '--dbfilename', `dump-${port}.rdb`, '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
        '--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--repl-diskless-sync-delay', '0', ...(options.args ?? []),
      ];
      servers.start(port, args);
    }
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (const port of ports) {
      while (!(await ping(port, 200))) {
        if (Date.now() > deadline || !servers.running(port)) throw new Error(`redis on port ${port} did not start`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    await run(cli, ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: START_TIMEOUT_MS });

    const live = () => ports.filter((p) => servers.running(p));
    const nodesSeenBy = async (port: number): Promise<NodeLine[] | undefined> => read(port, async (c) => parseNodes((await c.call('CLUSTER', 'NODES')) as string));
    const ownerOf = (lines: NodeLine[], slot: number) => lines.find((n) => n.primary && n.alive && n.slots.some(([a, b]) => slot >= a && slot <= b));
    const whole = async (): Promise<boolean> => {
      for (const port of live()) {
        const ok = await read(port, async (c) => /cluster_state:ok/.test((await c.call('CLUSTER', 'INFO')) as string));
        if (!ok) return false;
      }
      return true;
    };
    const synced = async (primaryPort: number): Promise<boolean> => {
      const lines = await nodesSeenBy(primaryPort);
      const self = lines?.find((n) => n.port === primaryPort);
      if (!lines || !self) return false;
      const replicas = lines.filter((n) => !n.primary && n.primaryId === self.id && live().includes(n.port));
      if (replicas.length === 0) return false;
      const offset = (info: string, key: string): number => Number(new RegExp(`${key}:(\\d+)`).exec(info)?.[1] ?? -1);
      const primaryOffset = await read(primaryPort, (c) => c.info('replication').then((i) => offset(i, 'master_repl_offset')));
      for (const r of replicas) {
        const info = await read(r.port, (c) => c.info('replication'));
        if (!info || !/master_link_status:up/.test(info) || offset(info, 'slave_repl_offset') !== primaryOffset) return false;
      }
      return true;
    };
    const until = async (what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> => {
      const end = Date.now() + timeoutMs;
      while (!(await check())) {
        if (Date.now() > end) throw new Error(`cluster: ${what} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // Every node agrees the cluster is whole, and every primary's replica has synced.
    await until('not whole', START_TIMEOUT_MS, whole);
    await until('replicas not synced', START_TIMEOUT_MS, async () => {
      const lines = await nodesSeenBy(ports[0]);
      if (!lines) return false;
      for (const n of lines.filter((x) => x.primary)) if (!(await synced(n.port))) return false;
      return true;
    });

    const primaryOf = async (slot: number): Promise<number> => {
      for (const port of live()) {
        const owner = ownerOf((await nodesSeenBy(port)) ?? [], slot);
        if (owner && live().includes(owner.port)) return owner.port;
      }
      throw new Error(`cluster: no live primary serves slot ${slot}`);
    };
    return {
      nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
      async slotOf(key) {
        const slot = await read(live()[0], (c) => c.call('CLUSTER', 'KEYSLOT', key) as Promise<number>);
        if (slot === undefined) throw new Error('cluster: CLUSTER KEYSLOT failed');
        return Number(slot);
      },
      primaryOf,
      async replicated(slot, timeoutMs) {
        await until('replicas behind', timeoutMs, async () => synced(await primaryOf(slot)));
      },
      async killPrimaryOf(slot) {
        const port = await primaryOf(slot);
        servers.kill(port);
        return port;
      },
      async failedOver(slot, oldPort, timeoutMs) {
        let port = oldPort;
        await until(`no failover of slot ${slot} from port ${oldPort}`, timeoutMs, async () => {
          port = await primaryOf(slot).catch(() => oldPort);
          return port !== oldPort && (await whole());
        });
        return port;
      },
      async moveSlotsOf(slot) {
        const from = await primaryOf(slot);
        const lines = (await nodesSeenBy(from))!;
        const source = lines.find((n) => n.port === from)!;
        const target = lines.find((n) => n.primary && n.alive && n.port !== from && n.slots.length > 0)!;
        const count = source.slots.reduce((sum, [a, b]) => sum + b - a + 1, 0);
        await run(
          cli,
          ['--cluster', 'reshard', `127.0.0.1:${from}`, '--cluster-from', source.id, '--cluster-to', target.id, '--cluster-slots', String(count), '--cluster-yes'],
          { timeout: 120_000, maxBuffer: 64 << 20 },
        );
        return target.port;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
