// The embedded directory: nodes of one process (the default when no Redis is configured),
// optionally seeded with a static table of other processes' records by a local launcher.
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { RvmaError } from '../base/errors';
import { type Directory, type DirectoryEvent, type NameBinding, type NodeRecord, type RegistrationLostInfo } from './directory';
import { EventStream } from './event-stream';

const WATCH_LIMIT = 10_000;

// A record's pid alone does not say whether its owner lives: a record registered for another
// live process is that process's. So seeded records (stand-ins a launcher handed over, which
// the real registration replaces) are marked when seeded, and registered ones remember their
// directory, which is told when its record is replaced.
const seeded = new WeakSet<NodeRecord>();
const registrants = new WeakMap<NodeRecord, MemoryDirectory>();

/** Whether a registration of another incarnation may replace this record. */
function replaceable(record: NodeRecord): boolean {
  return seeded.has(record) || ownerGone(record);
}

/** Provably gone: a process of this host that no longer exists (signal 0 finds no such pid). */
function ownerGone(record: NodeRecord): boolean {
  if (record.host !== hostname() || record.pid === process.pid || !Number.isInteger(record.pid) || record.pid <= 0) return false;
  try {
    process.kill(record.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'; // EPERM: alive, another user's
  }
}

/** State shared by the MemoryDirectory instances that should see each other. */
export class MemoryDirectoryHub {
  readonly nodes = new Map<string, NodeRecord>();
  readonly names = new Map<string, NameBinding>();
  readonly watchers = new Set<EventStream<DirectoryEvent>>();

  /** Seeds records of nodes that live elsewhere (e.g. sibling processes a launcher started). */
  constructor(records: NodeRecord[] = []) {
    this.add(records);
  }

  /**
   * Adds (or refreshes) records of nodes that live in other processes; watchers see them join.
   * A node id registered through a directory of this hub is skipped: the registration is
   * authoritative.
   */
  add(records: NodeRecord[]): void {
    for (const record of records) {
      const current = this.nodes.get(record.nodeId);
      if (current && !seeded.has(current)) continue;
      // A copy: the caller's object may be another hub's registered record.
      const copy = { ...record };
      seeded.add(copy);
      this.nodes.set(record.nodeId, copy);
      this.emit({ type: current ? 'update' : 'join', node: copy });
    }
  }

  /** Drops a node that add() seeded (a launcher saw it exit); a registered node stays. */
  remove(nodeId: string): void {
    const current = this.nodes.get(nodeId);
    if (!current || !seeded.has(current)) return;
    this.nodes.delete(nodeId);
    this.emit({ type: 'leave', node: current });
  }

  emit(event: DirectoryEvent): void {
    for (const watcher of this.watchers) watcher.push(event);
  }
}

const processHub = new MemoryDirectoryHub();

/**
 * A Directory over a MemoryDirectoryHub. Emits 'lost' (RegistrationLostInfo, reason
 * 'takenOver') when another incarnation replaced this node's record because the process the
 * record names is gone.
 */
export class MemoryDirectory extends EventEmitter implements Directory {
  private self: NodeRecord | undefined;
  private readonly bound = new Set<string>();
  private readonly streams = new Set<EventStream<DirectoryEvent>>();
  private closed = false;

  /** Without a hub, all MemoryDirectory instances of the process share one. */
  constructor(private readonly hub: MemoryDirectoryHub = processHub) {
    super();
  }

  /**
   * Publishes the record. Replaces a record of another incarnation only if a launcher seeded it
   * or the process it names is gone (same host, no such pid); else ERR_RVMA_DIRECTORY_CONFLICT.
   */
  async register(node: NodeRecord): Promise<void> {
    this.assertOpen('register');
    const current = this.hub.nodes.get(node.nodeId);
    const other = current !== undefined && current !== this.self && current.incarnation !== node.incarnation;
    if (other && !replaceable(current)) {
      throw new RvmaError(
        'ERR_RVMA_DIRECTORY_CONFLICT',
        `MemoryDirectory.register: node "${node.nodeId}" is registered by incarnation ${current.incarnation}`,
      );
    }
    this.self = { ...node };
    registrants.set(this.self, this);
    this.hub.nodes.set(node.nodeId, this.self);
    this.hub.emit({ type: current ? 'update' : 'join', node: this.self });
    if (other) registrants.get(current)?.lose(current, node.incarnation);
  }

  async deregister(): Promise<void> {
    const self = this.self;
    if (!self) return;
    for (const name of this.bound) this.hub.names.delete(name);
    this.bound.clear();
    if (this.hub.nodes.get(self.nodeId) === self) this.hub.nodes.delete(self.nodeId);
    this.self = undefined;
    this.hub.emit({ type: 'leave', node: self });
  }

  async resolveNode(nodeId: string): Promise<NodeRecord | undefined> {
    return this.hub.nodes.get(nodeId);
  }

  async resolveLabel(label: string): Promise<NodeRecord | undefined> {
    for (const node of this.hub.nodes.values()) if (node.labels.includes(label)) return node;
    return undefined;
  }

  async bindName(name: string, vaddr: bigint): Promise<void> {
    const self = this.registered('bindName');
    const current = this.hub.names.get(name);
    if (current && current.nodeId !== self.nodeId && this.hub.nodes.has(current.nodeId)) {
      throw new RvmaError('ERR_RVMA_DIRECTORY_CONFLICT', `MemoryDirectory.bindName: "${name}" is bound by node "${current.nodeId}"`);
    }
    this.hub.names.set(name, { name, nodeId: self.nodeId, incarnation: self.incarnation, vaddr });
    this.bound.add(name);
  }

  async unbindName(name: string): Promise<void> {
    const binding = this.hub.names.get(name);
    const self = this.self;
    this.bound.delete(name);
    if (!binding) return;
    if (self && binding.nodeId === self.nodeId && binding.incarnation === self.incarnation) {
      this.hub.names.delete(name);
      return;
    }
    // Another node's binding: refused while that node lives, nothing to remove otherwise.
    if (this.hub.nodes.get(binding.nodeId)?.incarnation === binding.incarnation) {
      throw new RvmaError('ERR_RVMA_DIRECTORY_CONFLICT', `MemoryDirectory.unbindName: "${name}" is bound by node "${binding.nodeId}"`);
    }
  }

  async resolveName(name: string): Promise<NameBinding | undefined> {
    return this.hub.names.get(name);
  }

  async list(): Promise<NodeRecord[]> {
    return [...this.hub.nodes.values()];
  }

  async listNames(): Promise<NameBinding[]> {
    return [...this.hub.names.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  watch(options?: { signal?: AbortSignal }): AsyncIterableIterator<DirectoryEvent> {
    this.assertOpen('watch');
    const stream: EventStream<DirectoryEvent> = new EventStream(
      WATCH_LIMIT,
      () => {
        this.hub.watchers.delete(stream);
        this.streams.delete(stream);
      },
      options?.signal,
    );
    if (stream.done) return stream;
    this.hub.watchers.add(stream);
    this.streams.add(stream);
    return stream;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.deregister();
    this.closed = true;
    for (const stream of [...this.streams]) stream.end();
  }

  /** Our record was replaced by another incarnation: drop our names and report it. */
  private lose(record: NodeRecord, takenBy: string): void {
    if (this.self !== record) return;
    for (const name of this.bound) {
      const binding = this.hub.names.get(name);
      if (binding?.nodeId === record.nodeId && binding.incarnation === record.incarnation) this.hub.names.delete(name);
    }
    this.bound.clear();
    this.self = undefined;
    const info: RegistrationLostInfo = { nodeId: record.nodeId, incarnation: record.incarnation, reason: 'takenOver', takenBy };
    this.emit('lost', info);
  }

  private registered(call: string): NodeRecord {
    this.assertOpen(call);
    if (!this.self) throw new RvmaError('ERR_RVMA_NOT_REGISTERED', `MemoryDirectory.${call}: register() first`);
    return this.self;
  }

  private assertOpen(call: string): void {
    if (this.closed) throw new RvmaError('ERR_RVMA_CLOSED', `MemoryDirectory.${call}: the directory is closed`);
  }
}
