// Receiver side of push (see push.ts): the push mailboxes kept posted for repeating keys.
// A pushed content answers its recv or waits in its step for one; a recv whose sender kept its
// tensor (NOT_PUSHED, or pushes ended) asks for it instead.
import type { TensorMeta } from '../tensor/codec';
import type { MetaCache } from './caches';
import { type ManagerContext, recvId } from './context';
import type { NotPushed, PushAccepted } from './messages';
import { type Inbox, type Inboxes, PUSH_BUFFERS, PUSH_HEADER_BYTES, PUSH_HELD_MAX, pushBufferBytes, pushedStep } from './push';
import { type Received } from './rendezvous';
import { tensorOf } from './receive-pool';

/** NOT_PUSHED told before its recv came: that recv asks instead of waiting for a push. */
const NOT_PUSHED_KEPT = 4096;

/** What the push mailboxes need of the receiver's remote recvs. */
export interface PushedRecvs {
  /** The recv of key in the step in progress, if any, takes the pushed item; false when none is. */
  takePushed(stepId: bigint, key: string, peer: string, item: Received): boolean;
  /** The recv of key in the step, if one is in progress, asks peer for its tensor; false when none is. */
  askFor(stepId: string, key: string, peer: string): boolean;
  /** Every recv of the key waiting for a push from peer asks instead. */
  askAll(key: string, peer: string): void;
}

export class PushReceiver {
  /** (step, key) whose sender kept the tensor for a request (NOT_PUSHED came before its recv). */
  private readonly notPushed = new Set<string>();

  constructor(
    private readonly ctx: ManagerContext,
    private readonly inboxes: Inboxes,
    private readonly metaCache: MetaCache,
    private readonly recvs: PushedRecvs,
  ) {}

  /** Opens and posts the key's push mailbox if it fits; its vaddr goes in the request (0n: none). */
  offer(key: string, peer: string, meta: TensorMeta): bigint {
    if (!this.inboxes.fits(key, meta)) return 0n;
    const mailbox = this.ctx.endpoint.openDynamicMailbox({ epoch: 'ops', threshold: 1, maxBuffers: PUSH_BUFFERS, allow: [peer] });
    const inbox: Inbox = { key, peer, meta, mailbox, active: false, posted: 0, waiting: new Set() };
    this.repost(inbox);
    mailbox.listen((c) => this.arrived(inbox, c.buffer, c.bytes));
    this.inboxes.add(inbox);
    return mailbox.vaddr;
  }

  /** The request that offered the push mailbox at vaddr never got to its sender: no push can come. */
  withdrawOffer(key: string, vaddr: bigint): void {
    const inbox = this.inboxes.get(key);
    if (inbox && inbox.mailbox.vaddr === vaddr) this.inboxes.remove(inbox);
  }

  /** The peer a recv of key in the step waits for a push from; undefined when it must ask. */
  pusherOf(stepId: bigint, key: string): string | undefined {
    const inbox = this.inboxes.get(key);
    return inbox?.active && !this.notPushed.delete(recvId(stepId, key)) ? inbox.peer : undefined;
  }

  /** Posts the push mailbox's buffers again, within what a key may hold (PUSH_HELD_MAX). */
  private repost(inbox: Inbox): void {
    const size = pushBufferBytes(inbox.meta);
    while (!this.ctx.closed() && !inbox.mailbox.closed && inbox.posted < PUSH_BUFFERS && inbox.posted + inbox.waiting.size < PUSH_HELD_MAX) {
      inbox.mailbox.post(this.ctx.pool.take(size));
      inbox.posted++;
    }
  }

  /** A pushed content no longer waits in its step (taken by its recv, or the step aborted). */
  taken(key: string, step: bigint): void {
    const inbox = this.inboxes.get(key);
    if (inbox?.waiting.delete(step)) this.repost(inbox);
  }

  /** The step aborted: what its pushed contents held is dropped. */
  stepAborted(step: bigint): void {
    for (const inbox of this.inboxes.all()) this.taken(inbox.key, step);
  }

  accepted(m: PushAccepted): void {
    const inbox = this.inboxes.get(m.key);
    if (inbox && inbox.peer === m.from && inbox.mailbox.vaddr === m.pushVaddr) inbox.active = true;
  }

  /** A pushed content landed; it answers its recv, or waits in its step for one. */
  private arrived(inbox: Inbox, buffer: Uint8Array, bytes: number): void {
    const { ctx } = this;
    const size = pushBufferBytes(inbox.meta);
    inbox.posted--;
    const step = pushedStep(buffer, bytes);
    if (step === undefined || bytes !== size) {
      // Not what was offered: whatever it was, the recv of the step it names asks for its tensor.
      ctx.counters.errors++;
      ctx.pool.giveBack(buffer);
      this.repost(inbox);
      if (step !== undefined) this.mustAsk(inbox.key, step.toString(), inbox.peer);
      return;
    }
    if (ctx.closed() || ctx.steps.wasCleaned(step)) {
      ctx.pool.giveBack(buffer);
      return this.repost(inbox);
    }
    ctx.counters.pushesReceived++;
    ctx.counters.bytesReceived += inbox.meta.byteSize;
    const item: Received = {
      tensor: tensorOf(inbox.meta, buffer.subarray(PUSH_HEADER_BYTES, size)),
      isDead: false,
      release: ctx.pool.releaser(buffer),
    };
    if (this.recvs.takePushed(step, inbox.key, inbox.peer, item)) return this.repost(inbox);
    const rendezvous = ctx.steps.of(step);
    if (!rendezvous.restore(inbox.key, item, false)) {
      ctx.counters.errors++; // a second push of one step's key, or the step aborted: dropped
      ctx.pool.giveBack(buffer);
    } else if (rendezvous.holdsSent(inbox.key)) {
      inbox.waiting.add(step); // parked until its recv comes
    }
    this.repost(inbox);
  }

  /** The sender kept a step's tensor of a pushed key; its recv asks for it. */
  notPushedArrived(m: NotPushed): void {
    if (m.dropped) {
      const inbox = this.inboxes.get(m.key);
      if (inbox && inbox.peer === m.from) {
        // The new meta first: the recvs asking now size their buffers for it (no meta response).
        if (m.meta && !this.ctx.options.validate) this.metaCache.set(m.key, m.meta);
        this.drop(inbox);
      }
    }
    this.mustAsk(m.key, m.stepId, m.from);
  }

  private mustAsk(key: string, stepId: string, peer: string): void {
    if (this.recvs.askFor(stepId, key, peer)) return;
    this.notPushed.add(recvId(stepId, key));
    if (this.notPushed.size > NOT_PUSHED_KEPT) this.notPushed.delete(this.notPushed.values().next().value!);
  }

  /** The sender stopped pushing the key; recvs waiting for a push ask instead. */
  private drop(inbox: Inbox): void {
    this.inboxes.remove(inbox);
    this.recvs.askAll(inbox.key, inbox.peer);
  }

  /** The peer pushes no more (PUSH_ENDED): its keys' recvs ask. */
  ended(peer: string): void {
    for (const inbox of this.inboxes.ofPeer(peer)) this.drop(inbox);
  }

  peerLost(nodeId: string): void {
    for (const inbox of this.inboxes.ofPeer(nodeId)) this.inboxes.remove(inbox);
  }
}
