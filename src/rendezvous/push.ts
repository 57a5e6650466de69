// Push: the content of a key that repeats step after step, put by its sender straight into a
// mailbox its receiver keeps posted for that key, with no request per transfer. The receiver
// offers the mailbox in a request once the key's meta is cached; the sender accepts
// (PUSH_ACCEPTED), and from then on a send of the key with that meta is put at once, the step
// id in front of the content. A send it does not push (another meta, a full or closed mailbox)
// stays for a request, and the receiver is told (NOT_PUSHED) so that its recv asks for it.
import type { Mailbox } from '../mailbox/mailbox';
import type { TensorMeta } from '../tensor/codec';

/** The step id in front of a pushed content: u64 little-endian. */
export const PUSH_HEADER_BYTES = 8;
/** Buffers posted per push mailbox: pushes that may land before the receiver re-posts. */
export const PUSH_BUFFERS = 2;
/**
 * Buffers one key's push mailbox holds at the receiver, posted or holding pushed contents that
 * wait for their recvs. At the bound no buffer is posted again, so further pushes find the
 * mailbox full and the sender keeps those tensors for a request: a sender running ahead loses
 * nothing, and one pushing steps nobody receives costs this many buffers per key.
 */
export const PUSH_HELD_MAX = 6;

export function pushHeader(stepId: bigint): Uint8Array {
  const header = new Uint8Array(PUSH_HEADER_BYTES);
  new DataView(header.buffer).setBigUint64(0, stepId, true);
  return header;
}

/** The step a pushed frame of `bytes` bytes (a peer's claim) names; undefined when it holds no header. */
export function pushedStep(frame: Uint8Array, bytes: number): bigint | undefined {
  if (!(bytes >= PUSH_HEADER_BYTES && bytes <= frame.byteLength)) return undefined;
  return new DataView(frame.buffer, frame.byteOffset, PUSH_HEADER_BYTES).getBigUint64(0, true);
}

/** Bytes of one posted buffer of a push mailbox for tensors of this meta. */
export const pushBufferBytes = (meta: TensorMeta): number => PUSH_HEADER_BYTES + meta.byteSize;

/** Receiver side: the push mailbox of one key. */
export interface Inbox {
  key: string;
  /** The node that may push into it: the one hosting the key's source task. */
  peer: string;
  meta: TensorMeta;
  mailbox: Mailbox;
  /** The sender accepted it: recvs of the key wait for the push instead of asking. */
  active: boolean;
  /** Buffers posted now (PUSH_BUFFERS at most). */
  posted: number;
  /** Steps whose pushed content waits for its recv. */
  waiting: Set<bigint>;
}

/** Receiver side: the push mailboxes by key, within a byte budget (their buffers stay posted). */
export class Inboxes {
  private readonly byKey = new Map<string, Inbox>();
  private bytes = 0;

  constructor(
    private readonly budgetBytes: number,
    private readonly maxTensorBytes: number,
  ) {}

  /** Whether a push mailbox may be opened now for the key's tensors of this meta. */
  fits(key: string, meta: TensorMeta): boolean {
    if (this.byKey.has(key) || meta.isDead || meta.dtype === 'string' || meta.byteSize === 0) return false;
    return meta.byteSize <= this.maxTensorBytes && this.bytes + PUSH_BUFFERS * pushBufferBytes(meta) <= this.budgetBytes;
  }

  add(inbox: Inbox): void {
    this.byKey.set(inbox.key, inbox);
    this.bytes += PUSH_BUFFERS * pushBufferBytes(inbox.meta);
  }

  get(key: string): Inbox | undefined {
    return this.byKey.get(key);
  }

  /** Forgets the key's mailbox and closes it. */
  remove(inbox: Inbox): void {
    if (this.byKey.get(inbox.key) !== inbox) return;
    this.byKey.delete(inbox.key);
    this.bytes -= PUSH_BUFFERS * pushBufferBytes(inbox.meta);
    inbox.mailbox.close();
  }

  all(): IterableIterator<Inbox> {
    return this.byKey.values();
  }

  ofPeer(peer: string): Inbox[] {
    return [...this.byKey.values()].filter((inbox) => inbox.peer === peer);
  }

  clear(): void {
    for (const inbox of [...this.byKey.values()]) this.remove(inbox);
  }

  get active(): number {
    let n = 0;
    for (const inbox of this.byKey.values()) if (inbox.active) n++;
    return n;
  }
}

/** Sender side: where a key's content is pushed. */
export interface PushRoute {
  peer: string;
  vaddr: bigint;
  /** The meta the receiver's buffers are sized for: only tensors of exactly this meta are pushed. */
  meta: TensorMeta;
}

/** Sender side: the push routes by key, at most `limit` of them. */
export class PushRoutes {
  private readonly byKey = new Map<string, PushRoute>();

  constructor(private readonly limit: number) {}

  /** Takes a receiver's offer; false when it cannot be kept (the table is full). */
  accept(key: string, route: PushRoute): boolean {
    if (!this.byKey.has(key) && this.byKey.size >= this.limit) return false;
    this.byKey.set(key, route);
    return true;
  }

  get(key: string): PushRoute | undefined {
    return this.byKey.get(key);
  }

  /** Drops the key's route if it is still this one (a newer offer may have replaced it). */
  drop(key: string, route: PushRoute): void {
    if (this.byKey.get(key) === route) this.byKey.delete(key);
  }

  dropPeer(peer: string): void {
    for (const [key, route] of [...this.byKey]) if (route.peer === peer) this.byKey.delete(key);
  }

  /** The receivers some key is pushed to. */
  peers(): Set<string> {
    return new Set([...this.byKey.values()].map((route) => route.peer));
  }

  clear(): void {
    this.byKey.clear();
  }

}
