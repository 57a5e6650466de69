// The three Redis deployments bench:directory compares (one server, Sentinel, Cluster), started
// from the launchers in support/, and what the bench reads from their servers (INFO).
import * as fs from 'node:fs';
import Redis from 'ioredis';
import { privateRedis } from '../../support/private-redis';
import { startCluster } from '../../support/redis-cluster';
import { startSentinels } from '../../support/redis-sentinel';
import { type Target } from './protocol';

export type DeploymentId = 'single' | 'sentinel' | 'cluster';

export const DEPLOYMENTS: { id: DeploymentId; label: string }[] = [
  { id: 'single', label: 'one server' },
  { id: 'sentinel', label: 'Sentinel' },
  { id: 'cluster', label: 'Cluster' },
];

export interface Running {
  /** What RedisDirectory.connect is given, besides the namespace. */
  target: Target;
  /** Every server of the set, sentinels included. */
  ports: number[];
  /** The primaries (data-bearing servers that are not replicas). */
  primaries: number[];
  /** The primary that holds the namespace's keys (on a cluster, its hash slot's). */
  namespacePrimary: number;
  /** Servers' INFO, through one connection each kept for the run. */
  info: Info;
  stop(): Promise<void>;
}

/** The soft limit on open files: Redis keeps 32 of them for itself and allows a client per remaining one. */
export function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** What one INFO says, by field (e.g. 'total_commands_processed', 'cmdstat_eval'). */
export type InfoFields = Map<string, string>;

export class Info {
  private readonly clients = new Map<number, Redis>();

  async read(port: number): Promise<InfoFields> {
    let client = this.clients.get(port);
    if (!client) {
      client = new Redis({
        host: '127.0.0.1',
        port,
        connectTimeout: 5000,
        commandTimeout: 5000,
        maxRetriesPerRequest: 1,
        retryStrategy: () => null,
        enableReadyCheck: false,
      });
      client.on('error', () => undefined);
      this.clients.set(port, client);
    }
    // Redis 7 takes several sections; commandstats is not among the default ones.
    const text = (await client.call('INFO', 'default', 'commandstats')) as string;
    const fields: InfoFields = new Map();
    for (const line of text.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1));
    }
    return fields;
  }

  close(): void {
    for (const client of this.clients.values()) client.disconnect();
    this.clients.clear();
  }
}

/** A number field of INFO; cmdstat_* lines are read for their calls. */
export function field(info: InfoFields, name: string): number {
  const raw = info.get(name);
  if (raw === undefined) return 0;
  const calls = /(?:^|,)calls=(\d+)/.exec(raw);
  return Number(calls ? calls[1] : raw);
}

/** Starts a deployment; `args` go to every redis-server of it (e.g. --maxclients). */
export async function startDeployment(id: DeploymentId, namespace: string, args: string[]): Promise<Running> {
  const info = new Info();
  const roles = async (ports: number[]): Promise<number[]> => {
    const primaries: number[] = [];
    for (const port of ports) {
      const i = await info.read(port);
      if (i.get('redis_mode') !== 'sentinel' && i.get('role') === 'master') primaries.push(port);
    }
    return primaries;
  };
  const servers = await startServers(id, namespace, args, info);
  try {
    const ports = await servers.ports();
    return {
      target: servers.target,
      ports,
      primaries: await roles(ports),
      namespacePrimary: await servers.namespacePrimary(),
      info,
      stop: async () => {
        info.close();
        await servers.stop();
      },
    };
  } catch (error) {
    info.close();
    await servers.stop();
    throw error;
  }
}

/** A deployment's servers: where clients go, every server's port, and which primary holds the namespace. */
interface Servers {
  target: Target;
  ports(): Promise<number[]>;
  namespacePrimary(): Promise<number>;
  stop(): Promise<void>;
}

async function startServers(id: DeploymentId, namespace: string, args: string[], info: Info): Promise<Servers> {
  if (id === 'single') {
    const redis = await privateRedis({ ignoreRedisUrl: true, args });
    const port = Number(new URL(redis.url).port);
    return { target: { url: redis.url }, ports: async () => [port], namespacePrimary: async () => port, stop: () => redis.stop() };
  }
  if (id === 'sentinel') {
    const set = await startSentinels({ args });
    return {
      target: { sentinels: set.sentinels, name: set.name },
      async ports() {
        const primary = await set.primaryPort();
        const replicas = [...(await info.read(primary)).entries()]
          .filter(([key]) => /^slave\d+$/.test(key))
          .map(([, value]) => Number(/port=(\d+)/.exec(value)?.[1]));
        return [primary, ...replicas, ...set.sentinels.map((s) => s.port)];
      },
      namespacePrimary: () => set.primaryPort(),
      stop: () => set.stop(),
    };
  }
  const set = await startCluster({ args });
  return {
    target: { clusterNodes: set.nodes },
    ports: async () => set.nodes.map((n) => n.port),
    namespacePrimary: async () => set.primaryOf(await set.slotOf(`rvma:{${namespace}}:members`)),
    stop: () => set.stop(),
  };
}
