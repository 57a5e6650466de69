// Receiver side of the protocol: remote recvs, from request to content.
// A recv asks the sender's node for its tensor (a cached meta sizes a one-time mailbox for the
// content at once), re-requests after a meta response, and settles with the content, an error,
// or a push (push-receiver.ts). The receiver never hands out memory addresses or keys: it opens
// a one-time mailbox and sends its vaddr.
import { crc32 } from 'node:zlib';
import type { NodeRecord } from '../directory/directory';
import { RvmaError, type RvmaErrorCode, isRvmaErrorCode } from '../base/errors';
import { type Mailbox } from '../mailbox/mailbox';
import { invalid } from '../base/validate';
import { Wait, type WaitOptions } from '../base/wait';
import { type TensorMeta } from '../tensor/codec';
import { MetaCache, SenderNodes } from './caches';
import { type ManagerContext, recvId } from './context';
import { type ParsedKey, normalIncarnation } from './key';
import { ControlMessageError, type ErrorStatus, Kind, type MetaDataResponse, type TensorReRequest } from './messages';
import { type Inboxes } from './push';
import { type PushedRecvs, PushReceiver } from './push-receiver';
import { tensorOf } from './receive-pool';
import { type Received, type Rendezvous } from './rendezvous';

/** A recv waiting on a remote sender. */
interface PendingRecv {
  key: string;
  parsed: Readonly<ParsedKey>;
  stepId: bigint;
  wait: Wait<Received>;
  peer?: string;
  mailbox?: Mailbox;
  meta?: TensorMeta;
  checksum: number | null;
  /** The request went (or is going) to the sender. */
  asked: boolean;
  /** Settled by the sender's answer, or its loss: nothing to withdraw. */
  answered: boolean;
}

export class Receiver {
  private readonly requests = new Map<number, PendingRecv>();
  /** The request index of each remote recv in progress by (step, key) (a second one is refused). */
  private readonly receiving = new Map<string, number>();
  private nextRequest = 1;
  readonly metaCache: MetaCache;
  private readonly senders: SenderNodes;
  readonly push: PushReceiver;

  constructor(
    private readonly ctx: ManagerContext,
    inboxes: Inboxes,
  ) {
    this.metaCache = new MetaCache(ctx.options.metaCacheSize);
    this.senders = new SenderNodes(ctx.endpoint.directory);
    this.push = new PushReceiver(ctx, inboxes, this.metaCache, this.pushed);
  }

  /** Asks the sender's task for the tensor. */
  recvRemote(rendezvous: Rendezvous, key: string, parsed: Readonly<ParsedKey>, options: WaitOptions): Promise<Received> {
    const receiving = recvId(rendezvous.stepId, key);
    if (this.receiving.has(receiving)) {
      // As for a local recv: one recv of a key per step at a time (see docs/rendezvous.md).
      return Promise.reject(invalid('Rendezvous.recv', `key is already being received in step ${rendezvous.stepId}: ${key}`));
    }
    const pushed = rendezvous.takeSent(key); // pushed before its recv came
    if (pushed) {
      this.push.taken(key, rendezvous.stepId);
      return Promise.resolve(pushed);
    }
    const index = this.nextRequest++;
    const wait = new Wait<Received>(`Rendezvous.recv of ${key}`, options, () => {
      const pending = this.requests.get(index);
      this.requests.delete(index);
      this.receiving.delete(receiving);
      if (!pending) return;
      pending.mailbox?.close();
      // A recv that gave up withdraws its request, so that the tensor goes to the next recv.
      if (pending.asked && !pending.answered && pending.peer) this.cancel(pending.peer, index);
    });
    if (wait.done) return wait.promise;
    const pending: PendingRecv = { key, parsed, stepId: rendezvous.stepId, wait, checksum: null, asked: false, answered: false };
    this.requests.set(index, pending);
    this.receiving.set(receiving, index);
    const pusher = this.push.pusherOf(rendezvous.stepId, key);
    if (pusher !== undefined) {
      pending.peer = pusher; // the push comes, or NOT_PUSHED and this recv asks then
      return wait.promise;
    }
    this.startRequest(index, pending);
    return wait.promise;
  }

  private cancel(peer: string, requestIndex: number): void {
    this.ctx.channel.send(peer, { kind: Kind.TensorCancel, ...this.ctx.from(), requestIndex }).catch(() => {});
  }

  private startRequest(index: number, pending: PendingRecv): void {
    const { parsed, wait } = pending;
    this.request(index, pending, parsed).catch((error: Error) => {
      // The node we knew for the task is gone or moved: ask the directory next time.
      const code = error instanceof RvmaError ? error.code : undefined;
      if (code === 'ERR_RVMA_PEER_LOST' || code === 'ERR_RVMA_NO_PEER' || code === 'ERR_RVMA_NO_MAILBOX') this.senders.forget(parsed.srcTask);
      wait.reject(error);
    });
  }

  private request(index: number, pending: PendingRecv, parsed: Readonly<ParsedKey>): Promise<void> {
    const sender = this.senders.of(parsed);
    // A sender already known is asked in this turn: the request leaves in the same write as the
    // puts made before it (a tensor just sent to that node, for one).
    if (sender instanceof Promise) return sender.then((record) => this.ask(index, pending, parsed, record));
    return this.ask(index, pending, parsed, sender);
  }

  private async ask(index: number, pending: PendingRecv, parsed: Readonly<ParsedKey>, record: NodeRecord | undefined): Promise<void> {
    const { ctx } = this;
    if (!record) throw new RvmaError('ERR_RVMA_NO_PEER', `Rendezvous.recv: no live node hosts ${parsed.srcTask}`);
    if (normalIncarnation(record.incarnation) !== parsed.srcIncarnation) {
      throw new RvmaError(
        'ERR_RVMA_PEER_LOST',
        `Rendezvous.recv: the key names incarnation ${parsed.srcIncarnation} of ${parsed.srcTask}, which is now ${record.incarnation}`,
      );
    }
    if (pending.wait.done) return;
    pending.peer = record.nodeId;
    const cached = ctx.options.validate ? undefined : this.metaCache.get(pending.key);
    if (cached && !cached.isDead && cached.byteSize > 0) this.allocate(pending, cached);
    // The key repeats: offer a push mailbox for the steps after this one.
    const offer = cached && pending.mailbox ? this.push.offer(pending.key, record.nodeId, cached) : 0n;
    ctx.counters.requests++;
    pending.asked = true; // from here a give-up is told to the sender (a cancel may overtake the request)
    try {
      await ctx.channel.send(record.nodeId, {
        kind: Kind.TensorRequest,
        ...ctx.from(),
        key: pending.key,
        stepId: pending.stepId.toString(),
        requestIndex: index,
        dataVaddr: pending.mailbox?.vaddr ?? 0n,
        cachedMeta: pending.mailbox ? cached! : null,
        pushVaddr: offer,
      });
    } catch (error) {
      // Never heard of, the push mailbox offered would wait for pushes that cannot come.
      if (offer) this.push.withdrawOffer(pending.key, offer);
      throw error;
    }
  }

  /** A one-time mailbox sized for the content; its completion finishes the recv. */
  private allocate(pending: PendingRecv, meta: TensorMeta): void {
    const { maxTensorBytes } = this.ctx.options;
    if (meta.byteSize > maxTensorBytes) {
      throw new RvmaError('ERR_RVMA_TOO_LARGE', `Rendezvous.recv: ${pending.key} is ${meta.byteSize} bytes, over maxTensorBytes (${maxTensorBytes})`);
    }
    pending.mailbox?.close();
    // Only the node the request went to may fill it: a third node's put is refused natively.
    const mailbox = this.ctx.endpoint.openDynamicMailbox({ epoch: 'bytes', maxBuffers: 1, allow: [pending.peer!] });
    mailbox.post(this.ctx.pool.take(meta.byteSize));
    pending.mailbox = mailbox;
    pending.meta = meta;
    mailbox.next().then(
      (completion) => this.contentArrived(pending, meta, completion.buffer, completion.bytes),
      () => {}, // closed: the recv settled another way
    );
  }

  private contentArrived(pending: PendingRecv, meta: TensorMeta, buffer: Uint8Array, bytes: number): void {
    if (pending.wait.done) return;
    const { counters, pool } = this.ctx;
    try {
      if (bytes !== meta.byteSize) throw new RvmaError('ERR_RVMA_PROTOCOL', `content of ${bytes} bytes, meta says ${meta.byteSize}`);
      if (pending.checksum !== null && crc32(buffer) !== pending.checksum) {
        throw new RvmaError('ERR_RVMA_CHECKSUM', `Rendezvous.recv: content of ${pending.key} does not match its checksum`);
      }
      counters.bytesReceived += bytes;
      const tensor = tensorOf(meta, buffer);
      if (meta.dtype === 'string') {
        pool.giveBack(buffer); // decoded into JS strings: the bytes are not needed any more
        this.answer(pending, undefined, { tensor, isDead: false });
      } else {
        this.answer(pending, undefined, { tensor, isDead: false, release: pool.releaser(buffer) });
      }
    } catch (error) {
      this.answer(pending, error as Error);
    }
  }

  /** Settles a recv with what its sender answered (nothing is withdrawn then). */
  private answer(pending: PendingRecv, error: Error | undefined, item?: Received): void {
    pending.answered = true;
    if (error) pending.wait.reject(error);
    else pending.wait.resolve(item!);
  }

  private pendingFrom(m: { requestIndex: number; from: string }): PendingRecv | undefined {
    const pending = this.requests.get(m.requestIndex);
    return pending && pending.peer === m.from ? pending : undefined; // answers only from the asked node
  }

  /** The remote recv of key in the step in progress, with its request index. */
  private inProgress(stepId: bigint | string, key: string): [number, PendingRecv] | undefined {
    const index = this.receiving.get(recvId(stepId, key));
    const pending = index === undefined ? undefined : this.requests.get(index);
    return pending && [index!, pending];
  }

  // What the push mailboxes ask of the recvs (see PushedRecvs).
  private readonly pushed: PushedRecvs = {
    takePushed: (stepId, key, peer, item) => {
      const recv = this.inProgress(stepId, key);
      if (!recv) return false;
      const [index, pending] = recv;
      // A recv that asked meanwhile (it began before the push mailbox was accepted): withdrawn.
      if (pending.asked && !pending.answered) this.cancel(peer, index);
      this.answer(pending, undefined, item);
      return true;
    },
    askFor: (stepId, key, peer) => {
      const recv = this.inProgress(stepId, key);
      if (!recv) return false;
      const [index, pending] = recv;
      if (!pending.asked && pending.peer === peer) this.startRequest(index, pending);
      return true;
    },
    askAll: (key, peer) => {
      for (const [index, pending] of [...this.requests]) {
        if (pending.key === key && !pending.asked && pending.peer === peer) this.startRequest(index, pending);
      }
    },
  };

  metaArrived(m: MetaDataResponse): void {
    const { ctx } = this;
    const pending = this.pendingFrom(m);
    if (!pending) return;
    ctx.counters.metaResponses++;
    this.metaCache.set(pending.key, m.meta);
    if (m.meta.isDead || m.meta.byteSize === 0) {
      this.answer(pending, undefined, { tensor: tensorOf(m.meta, new Uint8Array(0)), isDead: m.meta.isDead });
      return;
    }
    try {
      this.allocate(pending, m.meta);
    } catch (error) {
      return pending.wait.reject(error as Error); // ours, not the sender's: it holds the tensor for us
    }
    pending.checksum = m.checksum;
    ctx.counters.reRequests++;
    const message: TensorReRequest = { kind: Kind.TensorReRequest, ...ctx.from(), requestIndex: m.requestIndex, dataVaddr: pending.mailbox!.vaddr };
    ctx.channel.send(m.from, message).catch((error: Error) => pending.wait.reject(error));
  }

  errorArrived(m: ErrorStatus): void {
    const pending = this.pendingFrom(m);
    if (!pending) return;
    this.ctx.counters.errors++;
    const code: RvmaErrorCode = isRvmaErrorCode(m.code) ? m.code : 'ERR_RVMA_PROTOCOL';
    this.answer(pending, new RvmaError(code, `Rendezvous.recv: the sender ${m.from} failed: ${m.message}`));
  }

  /** A control message that could not be decoded: one that names its request fails that recv; others are dropped. */
  badMessage(error: Error, sender: string): void {
    const answering = error instanceof ControlMessageError ? error.answering : undefined;
    if (answering && answering.from !== sender) {
      this.ctx.counters.forged++;
      return;
    }
    this.ctx.counters.errors++;
    const pending = answering && this.pendingFrom({ from: answering.from, requestIndex: answering.requestIndex });
    if (pending) this.answer(pending, error);
  }

  /** The step aborted: its remote recvs fail too, and pushed contents it held are dropped. */
  stepAborted(step: bigint, error: Error): void {
    this.push.stepAborted(step);
    for (const pending of [...this.requests.values()]) if (pending.stepId === step) pending.wait.reject(error);
  }

  /** A sending node was lost: its recvs fail, and its tasks are asked of the directory again. */
  peerLost(nodeId: string, reason: string): void {
    this.senders.forgetNode(nodeId);
    this.push.peerLost(nodeId);
    const error = new RvmaError('ERR_RVMA_PEER_LOST', `Rendezvous.recv: the sending node ${nodeId} was lost (${reason})`);
    for (const pending of [...this.requests.values()]) if (pending.peer === nodeId) this.answer(pending, error);
  }

  /** Whether a remote recv belongs to the step. */
  busyIn(step: bigint): boolean {
    for (const pending of this.requests.values()) if (pending.stepId === step) return true;
    return false;
  }
}
