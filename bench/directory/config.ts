// bench:directory's settings, read once from the command line into a fixed shape: every default
// in one place, unknown options refused.
import { option, repetitions, selected } from '../common/args';
import { DEPLOYMENTS, type DeploymentId } from './deployments';

/**
 * The directory's defaults, which the bench does not override (so the figures are what users
 * get): a 5000 ms lease renewed every ttlMs / 3, watchers comparing the member list every ttlMs / 2.
 */
export const TTL_MS = 5000;
export const HEARTBEAT_MS = Math.floor(TTL_MS / 3);
export const WATCH_INTERVAL_MS = Math.floor(TTL_MS / 2);

export interface Config {
  quick: boolean;
  /** Registered nodes, each its own RedisDirectory. */
  nodes: number;
  /** Processes the nodes are spread over. */
  processes: number;
  /** Resolving directories, in one process, each one resolve at a time. */
  resolvers: number;
  resolveMs: number;
  /** Untimed resolving before resolveMs. */
  warmupMs: number;
  /** Bind one name per node, and measure resolveName too. */
  names: boolean;
  /** How long the servers' commands are counted while the nodes only renew: whole renewal periods. */
  renewalSampleMs: number;
  /** Watching directories, and the processes they are spread over. */
  watchers: number;
  watcherProcesses: number;
  /** Nodes registered (then deregistered) one at a time while the watchers watch. */
  joins: number;
  /** How long the servers' and watchers' CPU is measured while the watchers only watch. */
  idleWatchMs: number;
  reps: number;
  deployments: { id: DeploymentId; label: string }[];
}

const FLAGS = ['--quick', '--names'];
const VALUED = ['--nodes', '--deployments', '--reps', '--watchers', '--out'];

/**
 * Nodes per process at most: a node holds up to 4 connections (through Sentinel: the primary and
 * every sentinel), and 2,500 of them stay within the 20,000 open files a process had where this was written.
 */
const NODES_PER_PROCESS = 2500;

export function readConfig(argv: string[] = process.argv.slice(2)): Config {
  for (let i = 0; i < argv.length; i++) {
    if (VALUED.includes(argv[i])) i++;
    else if (!FLAGS.includes(argv[i])) throw new Error(`bench:directory: unknown option ${argv[i]} (known: ${[...FLAGS, ...VALUED].join(', ')})`);
  }
  const quick = argv.includes('--quick');
  const nodesText = option('--nodes');
  const nodes = nodesText === undefined ? (quick ? 1000 : 10_000) : Number(nodesText);
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error('--nodes needs a positive integer');
  const watchers = Number(option('--watchers') ?? 100);
  if (!Number.isInteger(watchers) || watchers < 1) throw new Error('--watchers needs a positive integer');
  return {
    quick,
    nodes,
    processes: Math.min(nodes, Math.max(4, Math.ceil(nodes / NODES_PER_PROCESS))),
    resolvers: 8,
    resolveMs: quick ? 2000 : 5000,
    warmupMs: 500,
    names: argv.includes('--names'),
    renewalSampleMs: (quick ? 2 : 3) * HEARTBEAT_MS,
    watchers,
    watcherProcesses: Math.min(4, watchers),
    joins: quick ? 20 : 100,
    idleWatchMs: (quick ? 1 : 2) * WATCH_INTERVAL_MS,
    reps: repetitions(1),
    deployments: selected('--deployments', DEPLOYMENTS),
  };
}
