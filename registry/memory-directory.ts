// The embedded directory: nodes of one process (the default when no Redis is configured),
// optionally seeded with a static table of other processes' records by a local launcher.
import { RvmaError } from '../src/mailbox/errors';
import { Directory, DirectoryEvent, NameBinding, NodeRecord } from './directory';
import { EventStream } from './event-stream';

const WATCH_LIMIT = 10_000;

/** State shared by the MemoryDirectory instances that should see each other. */
export class MemoryDirectoryHub {
  readonly nodes = new Map<string, NodeRecord>();
  readonly names = new Map<string, NameBinding>();
  readonly watchers = new Set<EventStream<DirectoryEvent>>();

  /** Seeds records of nodes that live elsewhere (e.g. sibling processes a launcher started). */
  constructor(records: NodeRecord[] = []) {
    this.add(records);
  }

  /** Adds (or refreshes) records of nodes that live in other processes; watchers see them join. */
  add(records: NodeRecord[]): void {
    for (const record of records) {
      const current = this.nodes.get(record.nodeId);
      if (current?.pid === process.pid) continue; // a local registration is authoritative
      this.nodes.set(record.nodeId, record);
      this.emit({ type: current ? 'update' : 'join', node: record });
    }
  }

  /** Drops a node that lives in another process (a launcher saw it exit). */
  remove(nodeId: string): void {
    const current = this.nodes.get(nodeId);
    if (!current || current.pid === process.pid) return;
    this.nodes.delete(nodeId);
    this.emit({ type: 'leave', node: current });
  }

  emit(event: DirectoryEvent): void {
    for (const watcher of this.watchers) watcher.push(event);
  }
}

const processHub = new MemoryDirectoryHub();

export class MemoryDirectory implements Directory {
  private self: NodeRecord | undefined;
  private readonly bound = new Set<string>();
  private readonly streams = new Set<EventStream<DirectoryEvent>>();
  private closed = false;

  /** Without a hub, all MemoryDirectory instances of the process share one. */
  constructor(private readonly hub: MemoryDirectoryHub = processHub) {}

  async register(node: NodeRecord): Promise<void> {
    this.assertOpen('register');
    const current = this.hub.nodes.get(node.nodeId);
    const live = current && current !== this.self && current.incarnation !== node.incarnation;
    if (live && !this.isSeeded(current)) {
      throw new RvmaError(
        'ERR_RVMA_DIRECTORY_CONFLICT',
        `MemoryDirectory.register: node "${node.nodeId}" is registered by incarnation ${current.incarnation}`,
      );
    }
    this.self = { ...node };
    this.hub.nodes.set(node.nodeId, this.self);
    this.hub.emit({ type: current ? 'update' : 'join', node: this.self });
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
    if (!this.bound.delete(name)) return;
    this.hub.names.delete(name);
  }

  async resolveName(name: string): Promise<NameBinding | undefined> {
    return this.hub.names.get(name);
  }

  async list(): Promise<NodeRecord[]> {
    return [...this.hub.nodes.values()];
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

  /** A seeded record has no live owner in this process: a local registration replaces it. */
  private isSeeded(record: NodeRecord): boolean {
    return record.pid !== process.pid;
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
