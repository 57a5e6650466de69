// The rows of bench:directory's table: what each figure is, its unit (kept in the results JSON)
// and how many digits it is shown with.
import { type Config } from './config';

export interface Metric {
  id: string;
  label: string;
  unit: string;
  digits: number;
  /** Measured only with --names. */
  names?: boolean;
}

export function metrics(c: Config): Metric[] {
  const k = c.resolvers;
  const w = c.watchers;
  return [
    { id: 'connectRate', label: 'connect: directories/s', unit: 'RedisDirectory.connect() per second, all nodes\' processes together', digits: 0 },
    { id: 'registerSeconds', label: `register ${c.nodes} nodes: s`, unit: 's', digits: 2 },
    { id: 'registerRate', label: 'register: nodes/s', unit: 'register() per second (with --names: and one bindName())', digits: 0 },
    { id: 'connectionsPerNode', label: 'connections per node, all servers', unit: 'connected_clients added over every server of the set, per node', digits: 2 },
    { id: 'usedMemoryMiB', label: 'used_memory after: MiB', unit: 'MiB, INFO used_memory of the primary holding the namespace', digits: 1 },
    { id: 'memoryPerNode', label: 'used_memory per node: B', unit: 'bytes, its growth from before connect, per node (records and connections)', digits: 0 },
    { id: 'steadyMemoryMiB', label: 'used_memory, renewing: MiB', unit: 'MiB, the same after the renewal sample (idle connections\' buffers shrunk)', digits: 1 },
    { id: 'dataPerNode', label: 'used_memory_dataset per node: B', unit: 'bytes per node of the primary\'s dataset (keys, values, members set), renewing', digits: 0 },
    { id: 'clientMemoryPerNode', label: 'mem_clients_normal per node: B', unit: 'bytes per node of client buffers, all servers, renewing', digits: 0 },
    { id: 'renewalCommands', label: 'renewal: commands/s per 1,000 nodes', unit: 'total_commands_processed per second over the primaries, per 1,000 nodes', digits: 0 },
    { id: 'renewalScripts', label: 'renewal: EVAL/s per 1,000 nodes', unit: 'EVAL calls per second over the primaries, per 1,000 nodes', digits: 0 },
    { id: 'renewalRedisCpu', label: 'renewal: Redis CPU %, primaries', unit: '% of one core', digits: 1 },
    { id: 'renewalAllCpu', label: 'renewal: Redis CPU %, all servers', unit: '% of one core', digits: 1 },
    { id: 'renewalNodesCpu', label: 'renewal: nodes\' processes CPU %', unit: '% of one core', digits: 1 },
    { id: 'clientRssPerNode', label: 'nodes\' processes RSS per node: KiB', unit: 'KiB per node of the nodes\' processes\' RSS growth (the directory and its client)', digits: 1 },
    { id: 'resolveNodeRate', label: `resolveNode/s (${k} clients)`, unit: 'resolves per second', digits: 0 },
    { id: 'resolveNodeMedian', label: 'resolveNode median µs', unit: 'µs', digits: 0 },
    { id: 'resolveNodeP99', label: 'resolveNode p99 µs', unit: 'µs', digits: 0 },
    { id: 'resolveNameRate', label: `resolveName/s (${k} clients)`, unit: 'resolves per second', digits: 0, names: true },
    { id: 'resolveNameMedian', label: 'resolveName median µs', unit: 'µs', digits: 0, names: true },
    { id: 'resolveNameP99', label: 'resolveName p99 µs', unit: 'µs', digits: 0, names: true },
    { id: 'resolveMisses', label: 'resolves that found nothing', unit: 'count (should be 0)', digits: 0 },
    { id: 'watchComparisons', label: `${w} idle watchers: comparisons/s`, unit: 'member-list comparisons (list(): MGET) per second; each watcher makes one per watchIntervalMs', digits: 1 },
    { id: 'watchIdleRedisCpu', label: `${w} idle watchers: Redis CPU %`, unit: '% of one core, all servers, while the watchers only watch', digits: 1 },
    { id: 'watchIdleClientCpu', label: `${w} idle watchers: their CPU %`, unit: '% of one core, the watchers\' processes', digits: 1 },
    { id: 'watchIdleMachineBusy', label: `${w} idle watchers: machine busy %`, unit: '% of all CPUs busy (/proc/stat), everything on the machine, while the watchers only watch', digits: 0 },
    { id: 'joinMedian', label: `join seen by all ${w}: median ms`, unit: 'ms from register() resolving to the last watcher\'s join', digits: 2 },
    { id: 'joinMax', label: `join seen by all ${w}: max ms`, unit: 'ms', digits: 2 },
    { id: 'leaveMedian', label: `leave seen by all ${w}: median ms`, unit: 'ms from deregister() resolving to the last watcher\'s leave', digits: 2 },
    { id: 'leaveMax', label: `leave seen by all ${w}: max ms`, unit: 'ms', digits: 2 },
    { id: 'watchMissed', label: 'watch events missed or doubled', unit: 'count (should be 0)', digits: 0 },
    { id: 'watchUnexpected', label: 'watch events of nodes already there', unit: 'events of the nodes registered before the watch began (none while their leases hold)', digits: 0 },
    { id: 'keysExpired', label: 'keys expired (leases lapsed)', unit: 'expired_keys over the primaries from registration to the end (none while every lease holds)', digits: 0 },
    { id: 'nodesLoopDelayMax', label: 'nodes\' event loops, most late: ms', unit: 'ms, the largest event-loop delay of the nodes\' processes over the run (a lease lapses past ttlMs - heartbeatMs)', digits: 0 },
    { id: 'leasesLost', label: 'leases lost (\'lost\' events)', unit: 'count (should be 0)', digits: 0 },
    { id: 'seconds', label: 'deployment total: s', unit: 's, start to stop', digits: 1 },
  ].filter((m: Metric) => !m.names || c.names);
}
