// What bench:directory's run.ts and its child processes (child.ts) say to each other over IPC,
// and the node records every simulated node registers.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import type { NodeRecord } from '../../src';

/** What RedisDirectory.connect is given, besides the namespace: one of the three deployments. */
export type Target =
  | { url: string }
  | { sentinels: { host: string; port: number }[]; name: string }
  | { clusterNodes: { host: string; port: number }[] };

export type Request =
  /** Opens `count` directories (one Redis connection, or more, each). */
  | { id: number; cmd: 'connect'; target: Target; namespace: string; count: number }
  /** Registers directory i as node `n<first + i>` (and binds `name-n<first + i>` with names). */
  | { id: number; cmd: 'register'; first: number; names: boolean }
  /** Every directory resolves random nodes `n0..n<nodes - 1>` (or their names) in a closed loop. */
  | { id: number; cmd: 'resolve'; what: 'node' | 'name'; nodes: number; durationMs: number; warmupMs: number }
  /** Every directory starts a watch; events of nodes whose id starts with `prefix` are reported as Seen. */
  | { id: number; cmd: 'watch'; prefix: string }
  | { id: number; cmd: 'watchStats' }
  | { id: number; cmd: 'usage' }
  | { id: number; cmd: 'exit' };

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** Sent unasked by a watching child once every one of its watchers saw an event. */
export interface Seen {
  seen: { type: 'join' | 'leave' | 'update'; nodeId: string; /** process.hrtime.bigint() of the last watcher, as a string */ lastNs: string };
}

export interface ResolveResult {
  ops: number;
  seconds: number;
  medianUs: number;
  p99Us: number;
  /** Resolves that found nothing (every node asked for is registered: should be 0). */
  misses: number;
}

export interface WatchStats {
  /** Events a watcher got twice. */
  duplicates: number;
  /** Events of nodes other than the ones the bench registered while watching, by type (none expected). */
  others: Record<string, number>;
  /** Per event ("join x3"): how many of this child's watchers saw it. */
  seenBy: Record<string, number>;
}

export interface Usage {
  /** CPU time (user + system) since the process started, µs. */
  cpuUs: number;
  /** 'lost' events of this process's directories so far. */
  lost: number;
  rssMiB: number;
  /** The longest the event loop was late since the process started, ms: a heartbeat late by ttlMs - heartbeatMs lets a lease lapse. */
  loopDelayMaxMs: number;
}

function hostId(): string | undefined {
  try {
    return `${fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${fs.readlinkSync('/proc/self/ns/net')}`;
  } catch {
    return undefined;
  }
}
const HOST_ID = hostId();

/** A record shaped like an Endpoint's (tcp and shm addresses, host identity, a task label): about 330 bytes of JSON. */
export function benchRecord(nodeId: string, index: number): NodeRecord {
  return {
    nodeId,
    incarnation: randomBytes(8).toString('hex'),
    addresses: { tcp: `tcp://127.0.0.1:${4100 + (index % 60000)}`, shm: `shm://rvma-${process.pid}-${nodeId}` },
    host: hostname(),
    ...(HOST_ID === undefined ? {} : { hostId: HOST_ID }),
    pid: process.pid,
    capabilities: ['tcp', 'shm'],
    labels: [`/job:worker/replica:0/task:${index}`],
    startTime: Date.now(),
  };
}
