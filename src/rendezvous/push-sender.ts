// Sender side of push (see push.ts): sends put straight into their receivers' push mailboxes.
// The routes are the receivers' offers for their repeating keys. A send it cannot push stays for a
// request, its receiver told.
import { RvmaError } from '../base/errors';
import { type TensorMeta, encodeContent, metaOf, sameMeta } from '../tensor/codec';
import type { ManagerContext } from './context';
import { Kind, type NotPushed, type PushAccepted } from './messages';
import { PushRoutes, pushHeader } from './push';
import type { Received, Rendezvous } from './rendezvous';

/** Keys a sender pushes at most (each offer beyond is declined: those recvs keep asking). */
const PUSH_ROUTES_KEPT = 4096;

export class PushSender {
  private readonly routes = new PushRoutes(PUSH_ROUTES_KEPT);
  /** The header of the step pushed last: its pushes share it (never written after it is made). */
  private header: { step: bigint; bytes: Uint8Array } | undefined;

  constructor(private readonly ctx: ManagerContext) {}

  /**
   * A receiver's push mailbox for the key; later sends of it go there at once, and so do the ones
   * parked already (the receiver, once it hears of the acceptance, asks for none).
   */
  accept(peer: string, key: string, vaddr: bigint, meta: TensorMeta): void {
    const current = this.routes.get(key);
    if (current && current.peer === peer && current.vaddr === vaddr) return;
    if (!this.routes.accept(key, { peer, vaddr, meta })) return;
    const message: PushAccepted = { kind: Kind.PushAccepted, ...this.ctx.from(), key, pushVaddr: vaddr };
    // Bounded: a peer may offer again and again (with requests it cancelled first, held nowhere).
    this.ctx.channel.send(peer, message, true).catch(() => {}); // unaccepted, the receiver keeps asking
    for (const rendezvous of this.ctx.steps.values()) {
      const parked = rendezvous.takeSent(key);
      if (parked && !this.push(rendezvous, key, parked)) rendezvous.restore(key, parked, false);
    }
  }

  /**
   * From Rendezvous.send with no recv waiting: puts the tensor into its receiver's push mailbox.
   * False when the key is not pushed (or this tensor cannot be): it is parked for a request then.
   * A push that fails brings the tensor back to its step, for a request.
   */
  push(rendezvous: Rendezvous, key: string, item: Received): boolean {
    const { ctx } = this;
    const route = this.routes.get(key);
    if (!route || ctx.closed()) return false;
    const step = rendezvous.stepId;
    const content = item.isDead || item.tensor.dtype === 'string' ? undefined : encodeContent(item.tensor);
    const meta = content && metaOf(item.tensor, false, content);
    if (!meta || !sameMeta(route.meta, meta)) {
      // Another meta than the receiver's buffers were sized for: told with it, the receiver asks
      // with that meta and offers a push mailbox for it at once.
      this.routes.drop(key, route);
      this.tellNotPushed(route.peer, key, step, true, meta);
      return false;
    }
    ctx.options.beforeContentPut?.(key, content);
    ctx.counters.pushes++;
    ctx.endpoint.put(route.peer, route.vaddr, [this.headerOf(step), content], { timeout: ctx.options.sendTimeoutMs }).then(
      () => {
        ctx.counters.bytesSent += content.byteLength;
      },
      (error: unknown) => {
        // Full (the receiver is behind): kept for a request. Gone or refused: no more pushes.
        const full = error instanceof RvmaError && error.code === 'ERR_RVMA_NO_BUFFER';
        if (!full) this.routes.drop(key, route);
        ctx.counters.pushes--;
        rendezvous.restore(key, item, false);
        this.tellNotPushed(route.peer, key, step, !full);
      },
    );
    return true;
  }

  /** A step's pushes share one header: a new 8-byte array per push cost 0.6 µs of it. */
  private headerOf(step: bigint): Uint8Array {
    if (this.header?.step !== step) this.header = { step, bytes: pushHeader(step) };
    return this.header.bytes;
  }

  private tellNotPushed(peer: string, key: string, step: bigint, dropped: boolean, meta?: TensorMeta): void {
    this.ctx.counters.notPushed++;
    const message: NotPushed = { kind: Kind.NotPushed, ...this.ctx.from(), key, stepId: step.toString(), dropped, ...(meta ? { meta } : {}) };
    this.ctx.channel.send(peer, message).catch(() => {}); // the receiver is gone, or its recv times out
  }

  peerLost(nodeId: string): void {
    this.routes.dropPeer(nodeId);
  }

  /** Pushes no more; returns the receivers that were pushed to (they must hear of it). */
  end(): Set<string> {
    const pushedTo = this.routes.peers();
    this.routes.clear();
    return pushedTo;
  }
}
