// What a receiver remembers between recvs: tensor metas by key, sender nodes by task.
// A cached meta sizes the next recv's mailbox before any answer; a known node saves a directory
// trip per recv.
import type { Directory, NodeRecord } from '../directory/directory';
import type { TensorMeta } from '../tensor/codec';
import { type ParsedKey, normalIncarnation } from './key';

/** Tensor metas by key, at most `size`, the least recently used dropped first. */
export class MetaCache {
  private readonly byKey = new Map<string, TensorMeta>();

  constructor(private readonly size: number) {}

  get(key: string): TensorMeta | undefined {
    const meta = this.byKey.get(key);
    if (meta) {
      this.byKey.delete(key); // most recently used: last in insertion order
      this.byKey.set(key, meta);
    }
    return meta;
  }

  set(key: string, meta: TensorMeta): void {
    this.byKey.delete(key);
    if (this.size === 0) return;
    this.byKey.set(key, meta);
    if (this.byKey.size > this.size) this.byKey.delete(this.byKey.keys().next().value!);
  }

  get entries(): number {
    return this.byKey.size;
  }
}

/** The node hosting each sender task, as the directory said. */
export class SenderNodes {
  private readonly byTask = new Map<string, NodeRecord>();

  constructor(private readonly directory: Directory) {}

  /**
   * The node hosting the key's source task. Asked of the directory once, and again only when the
   * key names another incarnation than the one known (the sender restarted) or that node was
   * lost: a directory round trip per recv would cost more than the transfer (a Redis GET).
   */
  of(parsed: Readonly<ParsedKey>): NodeRecord | undefined | Promise<NodeRecord | undefined> {
    const known = this.byTask.get(parsed.srcTask);
    if (known && normalIncarnation(known.incarnation) === parsed.srcIncarnation) return known;
    return this.directory.resolveLabel(parsed.srcTask).then((record) => {
      if (record) this.byTask.set(parsed.srcTask, record);
      else this.byTask.delete(parsed.srcTask);
      return record;
    });
  }

  /** The node known for the task is gone or moved: the directory is asked next time. */
  forget(task: string): void {
    this.byTask.delete(task);
  }

  /** The node was lost: every task it hosted is asked of the directory next time. */
  forgetNode(nodeId: string): void {
    for (const [task, record] of [...this.byTask]) if (record.nodeId === nodeId) this.byTask.delete(task);
  }
}
