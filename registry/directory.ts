// How nodes find each other: the Directory interface and its records. RedisDirectory is
// for deployments, MemoryDirectory for one process or a local launcher.

/** What a node publishes about itself. */
export interface NodeRecord {
  nodeId: string;
  /** The endpoint's incarnation (hex u64), new at every start: tells a restarted node apart. */
  incarnation: string;
  /** Address per provider, e.g. { tcp: 'tcp://10.0.0.7:4100' }. */
  addresses: Record<string, string>;
  host: string;
  pid: number;
  /** Providers this node can use. */
  capabilities: string[];
  /** Free-form labels; TensorFlow task names such as '/job:worker/replica:0/task:1'. */
  labels: string[];
  /** Milliseconds since the epoch when the node started. */
  startTime: number;
}

/** A name bound to a mailbox of a live node. */
export interface NameBinding {
  name: string;
  nodeId: string;
  incarnation: string;
  vaddr: bigint;
}

export type DirectoryEvent =
  | { type: 'join'; node: NodeRecord }
  | { type: 'update'; node: NodeRecord }
  | { type: 'leave'; node: NodeRecord };

/**
 * One node's view of the directory. register() once, then bind names; everything the
 * node registered or bound disappears with it (deregister, close, or a lapsed lease).
 */
export interface Directory {
  register(node: NodeRecord): Promise<void>;
  deregister(): Promise<void>;
  resolveNode(nodeId: string): Promise<NodeRecord | undefined>;
  /** The live node carrying this label (e.g. a TensorFlow task name). */
  resolveLabel(label: string): Promise<NodeRecord | undefined>;
  bindName(name: string, vaddr: bigint): Promise<void>;
  unbindName(name: string): Promise<void>;
  resolveName(name: string): Promise<NameBinding | undefined>;
  list(): Promise<NodeRecord[]>;
  /** Join/leave/update events until the signal aborts or the directory closes. */
  watch(options?: { signal?: AbortSignal }): AsyncIterableIterator<DirectoryEvent>;
  close(): Promise<void>;
}
