// How nodes find each other: the Directory interface and its records. RedisDirectory is
// for deployments, MemoryDirectory for one process or a local launcher.

/** What a node publishes about itself. */
export interface NodeRecord {
  nodeId: string;
  /** The endpoint's incarnation (hex u64), new at every start: tells a restarted node apart. */
  incarnation: string;
  /** Address per provider, e.g. { tcp: 'tcp://10.0.0.7:4100', shm: 'shm://rvma-4242-...' }. */
  addresses: Record<string, string>;
  host: string;
  /**
   * Boot id and network namespace of the node's host: nodes with the same one reach each
   * other over shared memory (the 'shm' address). Absent where unknown.
   */
  hostId?: string;
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
 * A directory's 'lost' event: this node's registration ended without deregister(), so the
 * node is no longer in the directory and its names are gone. The directory stops renewing it
 * and does not register again by itself.
 */
export interface RegistrationLostInfo {
  nodeId: string;
  /** The incarnation whose registration ended (this node's). */
  incarnation: string;
  /**
   * 'takenOver': another incarnation registered the node id (after this one's lease lapsed, or
   * after its process looked gone); 'expired': the lease lapsed, renewal having failed (Redis
   * unreachable, or the process stalled) for longer than the lease.
   */
  reason: 'takenOver' | 'expired';
  /** With 'takenOver': the incarnation that holds the node id now. */
  takenBy?: string;
}

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
  /** Removes a name this node bound; ERR_RVMA_DIRECTORY_CONFLICT if another live node holds it. */
  unbindName(name: string): Promise<void>;
  resolveName(name: string): Promise<NameBinding | undefined>;
  list(): Promise<NodeRecord[]>;
  /**
   * Every name bound to a live node, by name. Optional, so that a directory written before it
   * still implements the interface; both directories of this package have it.
   */
  listNames?(): Promise<NameBinding[]>;
  /** Join/leave/update events until the signal aborts or the directory closes. */
  watch(options?: { signal?: AbortSignal }): AsyncIterableIterator<DirectoryEvent>;
  close(): Promise<void>;
  /**
   * 'lost': this node's registration ended without deregister() (see RegistrationLostInfo).
   * Optional, so that a directory that cannot lose a registration need not be an emitter; both
   * directories of this package implement it.
   */
  on?(event: 'lost', listener: (info: RegistrationLostInfo) => void): unknown;
  off?(event: 'lost', listener: (info: RegistrationLostInfo) => void): unknown;
}
