// `rvma directory ls|watch`: the live nodes of a Redis directory, and their joins and leaves.
import { type NameBinding, type NodeRecord } from '../directory/directory';
import { RedisDirectory } from '../directory/redis-directory';
import { columns } from './columns';

export interface DirectoryOptions {
  redis?: string;
  namespace?: string;
  /** The former name of namespace. */
  cluster?: string;
  /** HOST:PORT,... of a Redis Cluster. */
  clusterNodes?: string;
  json?: boolean;
  /** ms; how long connecting may take. */
  connectTimeout?: number;
  /** A CA file for a rediss:// server's certificate. */
  tlsCa?: string;
}

export interface ListedNode extends NodeRecord {
  names: { name: string; vaddr: string }[];
}

async function connect(o: DirectoryOptions): Promise<RedisDirectory> {
  return RedisDirectory.connect({
    url: o.redis,
    ...(o.clusterNodes === undefined ? {} : { clusterNodes: clusterNodesOf(o.clusterNodes) }),
    namespace: o.namespace,
    cluster: o.cluster,
    connectTimeoutMs: o.connectTimeout,
    ...(o.tlsCa ? { tls: { caFile: o.tlsCa } } : {}),
  });
}

/** HOST:PORT,HOST:PORT as { host, port }s (RedisDirectory.connect checks them). */
function clusterNodesOf(list: string): { host: string; port: number }[] {
  return list.split(',').map((hostPort) => {
    const at = hostPort.lastIndexOf(':');
    return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
  });
}

/** The live nodes, by node id, each with the names bound to it. */
export async function listNodes(directory: RedisDirectory): Promise<ListedNode[]> {
  const [nodes, names] = await Promise.all([directory.list(), directory.listNames()]);
  const byNode = new Map<string, NameBinding[]>();
  for (const b of names) byNode.set(b.nodeId, [...(byNode.get(b.nodeId) ?? []), b]);
  return nodes
    .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1))
    .map((n) => ({ ...n, names: (byNode.get(n.nodeId) ?? []).map((b) => ({ name: b.name, vaddr: `0x${b.vaddr.toString(16)}` })) }));
}

function uptime(startTime: number, now: number): string {
  const s = Math.max(0, Math.round((now - startTime) / 1000));
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
}

export function formatNodes(nodes: ListedNode[], now = Date.now()): string {
  if (!nodes.length) return 'no live nodes';
  const rows = nodes.map((n) => [
    n.nodeId,
    n.incarnation,
    Object.values(n.addresses).join(' ') || '-',
    `${n.host}:${n.pid}`,
    uptime(n.startTime, now),
    n.labels.join(' ') || '-',
    n.names.map((b) => `${b.name}@${b.vaddr}`).join(' ') || '-',
  ]);
  return columns([['node', 'incarnation', 'addresses', 'host:pid', 'up', 'labels', 'names'], ...rows]);
}

export async function directoryLs(o: DirectoryOptions): Promise<void> {
  const directory = await connect(o);
  try {
    const nodes = await listNodes(directory);
    console.log(o.json ? JSON.stringify(nodes, null, 2) : formatNodes(nodes));
  } finally {
    await directory.close();
  }
}

function eventLine(type: string, node: NodeRecord, json: boolean | undefined): string {
  const time = new Date().toISOString();
  if (json) return JSON.stringify({ time, type, node });
  const addresses = Object.values(node.addresses).join(' ');
  return `${time} ${type.padEnd(6)} ${node.nodeId} ${node.incarnation}${addresses ? ` ${addresses}` : ''}${node.labels.length ? ` [${node.labels.join(' ')}]` : ''}`;
}

/** Prints the live nodes, then every join, update and leave, until the signal aborts. */
export async function directoryWatch(o: DirectoryOptions, signal: AbortSignal): Promise<void> {
  const directory = await connect(o);
  try {
    // Watch first, then list: a node that joins in between is seen by one of the two.
    const events = directory.watch({ signal });
    const shown = new Map<string, string>();
    for (const node of await listNodes(directory)) {
      shown.set(node.nodeId, node.incarnation);
      console.log(eventLine('live', node, o.json));
    }
    if (!o.json) console.log(`watching ${directory.url} (cluster ${o.cluster ?? 'default'}); Ctrl-C ends`);
    for await (const event of events) {
      if (event.type === 'join' && shown.get(event.node.nodeId) === event.node.incarnation) continue;
      if (event.type === 'leave') shown.delete(event.node.nodeId);
      else shown.set(event.node.nodeId, event.node.incarnation);
      console.log(eventLine(event.type, event.node, o.json));
    }
  } finally {
    await directory.close();
  }
}
