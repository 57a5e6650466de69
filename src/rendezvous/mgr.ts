// The rendezvous manager of one endpoint: one Rendezvous per step, the control channel,
// and both halves of TensorFlow's verbs protocol over mailboxes. The receiver never hands
// out memory addresses or keys: it opens a one-time mailbox and sends its vaddr.
import { crc32 } from 'node:zlib';
import type { NodeRecord } from '../directory/directory';
import { allocUnzeroed } from '../mailbox/alloc';
import { Endpoint, type PeerLostInfo } from '../mailbox/endpoint';
import { RvmaError, type RvmaErrorCode, isRvmaErrorCode } from '../base/errors';
import { type Mailbox } from '../mailbox/mailbox';
import { type U64, checkBoolean, checkInteger, checkOptions, checkU64, invalid } from '../base/validate';
import { Wait, type WaitOptions } from '../base/wait';
import { type TensorMeta, decodeStrings, encodeContent, metaOf, sameMeta } from '../tensor/codec';
import { viewAs } from '../tensor/dtypes';
import { type Tensor } from '../tensor/tensor';
import { ControlChannel } from './control';
import { type RendezvousCounters, newCounters } from './counters';
import { type NormalKey, type ParsedKey, normalIncarnation, normalKey } from './key';
import {
  type ControlMessage,
  ControlMessageError,
  type ErrorStatus,
  Kind,
  type MetaDataResponse,
  type NotPushed,
  type PushAccepted,
  type TensorReRequest,
  type TensorRequest,
} from './messages';
import { type Inbox, Inboxes, PUSH_BUFFERS, PUSH_HELD_MAX, PUSH_HEADER_BYTES, PushRoutes, pushBufferBytes, pushHeader, pushedStep } from './push';
import { type Received, Rendezvous, type RendezvousHost } from './rendezvous';
import { type Serving, ServingTable } from './serving';

export interface RendezvousOptions {
  /** Tasks this endpoint hosts (e.g. '/job:worker/replica:0/task:1'). Default: the endpoint's labels. */
  tasks?: string[];
  /** Checksum every transfer: the sender's checksum travels in the meta response. Default false. */
  validate?: boolean;
  /** Buffers posted to the control mailbox. Default 256. */
  controlBuffers?: number;
  /** Largest control message in bytes. Default 8192. */
  controlBufferBytes?: number;
  /** How long one control message may take to be accepted by its peer. Default 10000 ms. */
  sendTimeoutMs?: number;
  /** Fault injection: sees (and may alter) content bytes just before the sender puts them. */
  beforeContentPut?: (key: string, bytes: Uint8Array) => void;
  /** Largest tensor content a recv accepts (a sender's meta could claim any size). Default 4 GiB. */
  maxTensorBytes?: number;
  /** Tensor metas remembered for the cached-meta path, least recently used dropped first. Default 4096. */
  metaCacheSize?: number;
  /** Bytes of released receive buffers kept for reuse (Received.release). Default 256 MiB. */
  receivePoolBytes?: number;
  /**
   * Remote recvs' buffers go back to the receive pool when their step is cleaned up, as if
   * release() were called then: a step loop that cleans up its finished steps receives into warm
   * memory with no release() and no garbage collection. The tensor's data must not be used after
   * its step's cleanup. Default false; Rendezvous.recv's own `recycle` overrides it.
   */
  recycle?: boolean;
  /**
   * Bytes of push mailboxes this manager keeps posted for keys that repeat (see docs/rendezvous.md,
   * Push): their senders put the content at once, with no request. Default 64 MiB; 0 turns push off.
   */
  pushBufferBytes?: number;
  /**
   * Largest tensor content pushed; larger ones always take a request. Default 4 MiB: a push saves
   * a request's round trip, a few percent of moving 4 MiB, while its receiver keeps two buffers of
   * the tensor's size posted for the key (within pushBufferBytes).
   */
  pushMaxTensorBytes?: number;
  /**
   * Requests of one peer this manager holds at once (parked until their send, or holding a copy
   * for the re-request); a request past it is refused at once with ERROR_STATUS ERR_RVMA_OVERFLOW.
   * Also the most answers held by no request (refusals, errors, push acceptances) waiting to be
   * accepted by one peer; past it they are not sent. Default 1024 (docs/rendezvous.md, What a
   * peer can make a manager hold).
   */
  maxRequestsPerPeer?: number;
}

const CLEANED_STEPS_KEPT = 4096;
/** Cancels remembered whose request has not arrived yet (it may come after its cancel). */
const EARLY_CANCELS_KEPT = 4096;
/** NOT_PUSHED told before its recv came: that recv asks instead of waiting for a push. */
const NOT_PUSHED_KEPT = 4096;
/** Keys a sender pushes at most (each offer beyond is declined: those recvs keep asking). */
const PUSH_ROUTES_KEPT = 4096;
/** Tensors smaller than this land in an ordinary array, larger ones in native page-aligned memory. */
const SMALL_TENSOR_BYTES = 4096;

const OPTION_KEYS = [
  'tasks',
  'validate',
  'controlBuffers',
  'controlBufferBytes',
  'sendTimeoutMs',
  'beforeContentPut',
  'maxTensorBytes',
  'metaCacheSize',
  'receivePoolBytes',
  'recycle',
  'pushBufferBytes',
  'pushMaxTensorBytes',
  'maxRequestsPerPeer',
] as const;

/** A recv waiting on a remote sender (receiver side). */
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

export class RendezvousMgr {
  static create(endpoint: Endpoint, options?: RendezvousOptions): RendezvousMgr {
    const call = 'RendezvousMgr.create';
    if (!(endpoint instanceof Endpoint)) throw invalid(call, 'endpoint must be an Endpoint');
    const o = checkOptions<RendezvousOptions>(call, options, OPTION_KEYS);
    const tasks = o.tasks ?? [...endpoint.labels];
    if (!Array.isArray(tasks) || !tasks.every((t) => typeof t === 'string')) throw invalid(call, 'tasks must be strings');
    if (o.beforeContentPut !== undefined && typeof o.beforeContentPut !== 'function') {
      throw invalid(call, 'beforeContentPut must be a function');
    }
    return new RendezvousMgr(endpoint, new Set(tasks), {
      validate: o.validate === undefined ? false : checkBoolean(call, 'validate', o.validate),
      buffers: checkInteger(call, 'controlBuffers', o.controlBuffers ?? 256, 1, 65536),
      bufferBytes: checkInteger(call, 'controlBufferBytes', o.controlBufferBytes ?? 8192, 512, 1 << 24),
      sendTimeoutMs: checkInteger(call, 'sendTimeoutMs', o.sendTimeoutMs ?? 10_000, 1, 2 ** 31 - 1),
      beforeContentPut: o.beforeContentPut,
      maxTensorBytes: checkInteger(call, 'maxTensorBytes', o.maxTensorBytes ?? 2 ** 32, 0, 2 ** 40),
      metaCacheSize: checkInteger(call, 'metaCacheSize', o.metaCacheSize ?? 4096, 0, 2 ** 24),
      receivePoolBytes: checkInteger(call, 'receivePoolBytes', o.receivePoolBytes ?? 256 * 2 ** 20, 0, 2 ** 40),
      recycle: o.recycle === undefined ? false : checkBoolean(call, 'recycle', o.recycle),
      pushBufferBytes: checkInteger(call, 'pushBufferBytes', o.pushBufferBytes ?? 64 * 2 ** 20, 0, 2 ** 40),
      pushMaxTensorBytes: checkInteger(call, 'pushMaxTensorBytes', o.pushMaxTensorBytes ?? 4 * 2 ** 20, 0, 2 ** 40),
      maxRequestsPerPeer: checkInteger(call, 'maxRequestsPerPeer', o.maxRequestsPerPeer ?? 1024, 1, 2 ** 24),
    });
  }

  readonly counters: RendezvousCounters = newCounters();
  private readonly steps = new Map<bigint, Rendezvous>();
  private readonly requests = new Map<number, PendingRecv>();
  /** Sender side: the peers' requests being served (see serving.ts). */
  private readonly serving = new ServingTable();
  /**
   * Steps that only peers' requests made (find() never returned them): one goes with the last
   * request that holds it, so a peer cannot leave steps behind (it may name any step id).
   */
  private readonly peerSteps = new Set<bigint>();
  /** Receiver side: the request index of each remote recv in progress by (step, key) (a second one is refused). */
  private readonly receiving = new Map<string, number>();
  /** Receiver side: the push mailboxes; sender side: where keys are pushed (see push.ts). */
  private readonly inboxes: Inboxes;
  private readonly pushRoutes = new PushRoutes(PUSH_ROUTES_KEPT);
  /** Receiver side: (step, key) whose sender kept the tensor for a request (NOT_PUSHED came first). */
  private readonly notPushed = new Set<string>();
  private readonly earlyCancels = new Set<string>();
  private readonly metaCache = new Map<string, TensorMeta>();
  /** Receiver side: the node hosting each sender task, as the directory said (see senderOf). */
  private readonly senders = new Map<string, NodeRecord>();
  /** Released receive buffers by size, for the next recv of that size (see Received.release). */
  private readonly pool = new Map<number, Uint8Array[]>();
  private pooledBytes = 0;
  /** With recycle: the release() of each remote recv's tensor by step, run at the step's cleanup. */
  private readonly recycling = new Map<bigint, (() => void)[]>();
  /** Recently cleaned steps: a late request for one is refused, not parked forever. */
  private readonly cleaned = new Set<bigint>();
  private readonly channel: ControlChannel;
  private readonly onPeerLost = (info: PeerLostInfo) => this.peerLost(info.nodeId, info.reason);
  private nextRequest = 1;
  private closed = false;

  private constructor(
    readonly endpoint: Endpoint,
    private readonly tasks: Set<string>,
    private readonly options: {
      validate: boolean;
      buffers: number;
      bufferBytes: number;
      sendTimeoutMs: number;
      beforeContentPut?: (key: string, bytes: Uint8Array) => void;
      maxTensorBytes: number;
      metaCacheSize: number;
      receivePoolBytes: number;
      recycle: boolean;
      pushBufferBytes: number;
      pushMaxTensorBytes: number;
      maxRequestsPerPeer: number;
    },
  ) {
    this.inboxes = new Inboxes(options.validate ? 0 : options.pushBufferBytes, Math.min(options.pushMaxTensorBytes, options.maxTensorBytes));
    const control = { ...options, maxWaitingPerPeer: options.maxRequestsPerPeer };
    this.channel = new ControlChannel(endpoint, control, this.counters, (m, sender) => this.onMessage(m, sender), (error, sender) => {
      // An undecodable message that names its request fails that recv; others are dropped.
      const answering = error instanceof ControlMessageError ? error.answering : undefined;
      if (answering && answering.from !== sender) {
        this.counters.forged++;
        return;
      }
      this.counters.errors++;
      const pending = answering && this.pendingFrom({ from: answering.from, requestIndex: answering.requestIndex });
      if (pending) this.answer(pending, error);
    });
    endpoint.on('peerLost', this.onPeerLost);
    // The control loop ends when its mailbox closes: by close(), or with the endpoint. Then
    // nothing more can arrive, so what still waits fails now instead of at its timeout.
    const ended = (): Promise<void> => this.shutdown('the endpoint under the rendezvous manager closed');
    this.channel.done.then(ended, ended).catch(() => undefined); // a loop that failed: close() has nothing to add
  }

  /** The rendezvous of a step, created on first use. */
  find(stepId: U64): Rendezvous {
    const step = checkU64('RendezvousMgr.find', 'stepId', stepId);
    this.assertOpen('find');
    this.peerSteps.delete(step); // the application's now: it stays until cleanup
    return this.stepOf(step);
  }

  /** The step's rendezvous, created if new; `byRequest`: a peer's request asks, not the application. */
  private stepOf(step: bigint, byRequest = false): Rendezvous {
    let rendezvous = this.steps.get(step);
    if (!rendezvous) {
      rendezvous = new Rendezvous(step, this.host);
      this.steps.set(step, rendezvous);
      if (byRequest) this.peerSteps.add(step);
    } else if (!byRequest) {
      this.peerSteps.delete(step); // it holds what a peer pushed: the application's to take
    }
    return rendezvous;
  }

  /** Aborts and drops everything of a step: its pending recvs reject with ERR_RVMA_ABORTED. */
  cleanup(stepId: U64): void {
    const step = checkU64('RendezvousMgr.cleanup', 'stepId', stepId);
    this.cleaned.add(step);
    if (this.cleaned.size > CLEANED_STEPS_KEPT) this.cleaned.delete(this.cleaned.values().next().value!);
    const releases = this.recycling.get(step);
    if (releases) {
      this.recycling.delete(step);
      for (const release of releases) release();
    }
    const rendezvous = this.steps.get(step);
    if (!rendezvous) return;
    this.steps.delete(step);
    this.peerSteps.delete(step);
    const error = (): Error => new RvmaError('ERR_RVMA_ABORTED', `step ${step} was cleaned up`);
    // The usual case, every transfer of the step done: nothing to fail, so no error built yet.
    if (!this.busyIn(step) && rendezvous.retireIdle(error)) return;
    rendezvous.startAbort(error());
  }

  /** A remote recv's tensor, its buffer recycled when the step is cleaned up (see recycle). */
  private recycleAtCleanup(step: bigint, item: Received): Received {
    if (!item.release || this.closed || this.cleaned.has(step)) return item;
    let releases = this.recycling.get(step);
    if (!releases) this.recycling.set(step, (releases = []));
    releases.push(item.release);
    return item;
  }

  /** Whether a remote recv or a request being served belongs to the step. */
  private busyIn(step: bigint): boolean {
    for (const pending of this.requests.values()) if (pending.stepId === step) return true;
    return this.serving.inStep(step);
  }

  async close(): Promise<void> {
    await this.shutdown('the rendezvous manager closed');
  }

  private async shutdown(why: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.endpoint.off('peerLost', this.onPeerLost);
    const error = new RvmaError('ERR_RVMA_CLOSED', why);
    for (const step of [...this.steps.keys()]) this.steps.get(step)!.startAbort(error);
    this.steps.clear();
    this.peerSteps.clear();
    this.pool.clear();
    this.pooledBytes = 0;
    this.recycling.clear();
    this.inboxes.clear();
    // Receivers waiting for pushes from here ask instead, and find the control mailbox closed.
    const pushedTo = this.pushRoutes.peers();
    this.pushRoutes.clear();
    this.channel.close();
    await Promise.allSettled([...pushedTo].map((peer) => this.channel.send(peer, { kind: Kind.PushEnded, ...this.from() })));
    await this.channel.done;
  }

  // ---- What the step rendezvous ask of the manager (private: not part of the public type, so
  // the shipped declarations need no `implements` of an internal interface).
  private readonly host: RendezvousHost = {
    isLocalTask: (task) => this.tasks.has(task),
    recvRemote: (rendezvous, key, parsed, options, recycle) => {
      const received = this.recvRemote(rendezvous, key, parsed, options);
      return recycle ?? this.options.recycle ? received.then((item) => this.recycleAtCleanup(rendezvous.stepId, item)) : received;
    },
    push: (rendezvous, key, item) => this.push(rendezvous, key, item),
    aborted: (rendezvous, error) => this.aborted(rendezvous, error),
  };

  private aborted(rendezvous: Rendezvous, error: Error): void {
    for (const inbox of this.inboxes.all()) this.pushedTaken(inbox.key, rendezvous.stepId); // what they held is dropped
    for (const pending of [...this.requests.values()]) if (pending.stepId === rendezvous.stepId) pending.wait.reject(error);
    // Parked requests were answered with the error by their callbacks; held clones just go.
    for (const [id, s] of this.serving.entries()) if (s.stepId === rendezvous.stepId && !s.parked) this.forget(id);
  }

  /** Receiver side: ask the sender's task for the tensor. */
  private recvRemote(rendezvous: Rendezvous, key: string, parsed: Readonly<ParsedKey>, options: WaitOptions): Promise<Received> {
    const receiving = `${rendezvous.stepId};${key}`;
    if (this.receiving.has(receiving)) {
      // As for a local recv: one recv of a key per step at a time (see docs/rendezvous.md).
      return Promise.reject(invalid('Rendezvous.recv', `key is already being received in step ${rendezvous.stepId}: ${key}`));
    }
    const pushed = rendezvous.takeSent(key); // pushed before its recv came
    if (pushed) {
      this.pushedTaken(key, rendezvous.stepId);
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
      if (pending.asked && !pending.answered && pending.peer) {
        this.channel.send(pending.peer, { kind: Kind.TensorCancel, ...this.from(), requestIndex: index }).catch(() => {});
      }
    });
    if (wait.done) return wait.promise;
    const pending: PendingRecv = { key, parsed, stepId: rendezvous.stepId, wait, checksum: null, asked: false, answered: false };
    this.requests.set(index, pending);
    this.receiving.set(receiving, index);
    const inbox = this.inboxes.get(key);
    if (inbox?.active && !this.notPushed.delete(receiving)) {
      pending.peer = inbox.peer; // the push comes, or NOT_PUSHED and this recv asks then
      return wait.promise;
    }
    this.startRequest(index, pending);
    return wait.promise;
  }

  private startRequest(index: number, pending: PendingRecv): void {
    const { parsed, wait } = pending;
    this.request(index, pending, parsed).catch((error: Error) => {
      // The node we knew for the task is gone or moved: ask the directory next time.
      const code = error instanceof RvmaError ? error.code : undefined;
      if (code === 'ERR_RVMA_PEER_LOST' || code === 'ERR_RVMA_NO_PEER' || code === 'ERR_RVMA_NO_MAILBOX') this.senders.delete(parsed.srcTask);
      wait.reject(error);
    });
  }

  private request(index: number, pending: PendingRecv, parsed: Readonly<ParsedKey>): Promise<void> {
    const sender = this.senderOf(parsed);
    // A sender already known is asked in this turn: the request leaves in the same write as the
    // puts made before it (a tensor just sent to that node, for one).
    if (sender instanceof Promise) return sender.then((record) => this.ask(index, pending, parsed, record));
    return this.ask(index, pending, parsed, sender);
  }

  private async ask(index: number, pending: PendingRecv, parsed: Readonly<ParsedKey>, record: NodeRecord | undefined): Promise<void> {
    if (!record) throw new RvmaError('ERR_RVMA_NO_PEER', `Rendezvous.recv: no live node hosts ${parsed.srcTask}`);
    if (normalIncarnation(record.incarnation) !== parsed.srcIncarnation) {
      throw new RvmaError(
        'ERR_RVMA_PEER_LOST',
        `Rendezvous.recv: the key names incarnation ${parsed.srcIncarnation} of ${parsed.srcTask}, which is now ${record.incarnation}`,
      );
    }
    if (pending.wait.done) return;
    pending.peer = record.nodeId;
    const cached = this.options.validate ? undefined : this.cachedMeta(pending.key);
    if (cached && !cached.isDead && cached.byteSize > 0) this.allocate(pending, cached);
    // The key repeats: offer a push mailbox for the steps after this one.
    const offer = cached && pending.mailbox && this.inboxes.fits(pending.key, cached) ? this.openInbox(pending.key, record.nodeId, cached) : 0n;
    this.counters.requests++;
    pending.asked = true; // from here a give-up is told to the sender (a cancel may overtake the request)
    try {
      await this.channel.send(record.nodeId, {
        kind: Kind.TensorRequest,
        ...this.from(),
        key: pending.key,
        stepId: pending.stepId.toString(),
        requestIndex: index,
        dataVaddr: pending.mailbox?.vaddr ?? 0n,
        cachedMeta: pending.mailbox ? cached! : null,
        pushVaddr: offer,
      });
    } catch (error) {
      // Never heard of, the push mailbox offered would wait for pushes that cannot come.
      const inbox = offer ? this.inboxes.get(pending.key) : undefined;
      if (inbox && inbox.mailbox.vaddr === offer) this.inboxes.remove(inbox);
      throw error;
    }
  }

  /**
   * The node hosting the key's source task. Asked of the directory once, and again only when the
   * key names another incarnation than the one known (the sender restarted) or that node was
   * lost: a directory round trip per recv would cost more than the transfer (a Redis GET).
   */
  private senderOf(parsed: Readonly<ParsedKey>): NodeRecord | undefined | Promise<NodeRecord | undefined> {
    const known = this.senders.get(parsed.srcTask);
    if (known && normalIncarnation(known.incarnation) === parsed.srcIncarnation) return known;
    return this.endpoint.directory.resolveLabel(parsed.srcTask).then((record) => {
      if (record) this.senders.set(parsed.srcTask, record);
      else this.senders.delete(parsed.srcTask);
      return record;
    });
  }

  /** A one-time mailbox sized for the content; its completion finishes the recv. */
  private allocate(pending: PendingRecv, meta: TensorMeta): void {
    if (meta.byteSize > this.options.maxTensorBytes) {
      throw new RvmaError(
        'ERR_RVMA_TOO_LARGE',
        `Rendezvous.recv: ${pending.key} is ${meta.byteSize} bytes, over maxTensorBytes (${this.options.maxTensorBytes})`,
      );
    }
    pending.mailbox?.close();
    // Only the node the request went to may fill it: a third node's put is refused natively.
    const mailbox = this.endpoint.openDynamicMailbox({ epoch: 'bytes', maxBuffers: 1, allow: [pending.peer!] });
    mailbox.post(this.pooled(meta.byteSize) ?? freshBuffer(meta.byteSize));
    pending.mailbox = mailbox;
    pending.meta = meta;
    mailbox.next().then(
      (completion) => this.contentArrived(pending, meta, completion.buffer, completion.bytes),
      () => {}, // closed: the recv settled another way
    );
  }

  private contentArrived(pending: PendingRecv, meta: TensorMeta, buffer: Uint8Array, bytes: number): void {
    if (pending.wait.done) return;
    try {
      if (bytes !== meta.byteSize) throw new RvmaError('ERR_RVMA_PROTOCOL', `content of ${bytes} bytes, meta says ${meta.byteSize}`);
      if (pending.checksum !== null && crc32(buffer) !== pending.checksum) {
        throw new RvmaError('ERR_RVMA_CHECKSUM', `Rendezvous.recv: content of ${pending.key} does not match its checksum`);
      }
      this.counters.bytesReceived += bytes;
      const tensor = tensorOf(meta, buffer);
      if (meta.dtype === 'string') {
        this.giveBack(buffer); // decoded into JS strings: the bytes are not needed any more
        this.answer(pending, undefined, { tensor, isDead: false });
      } else {
        this.answer(pending, undefined, { tensor, isDead: false, release: this.releaser(buffer) });
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

  private cachedMeta(key: string): TensorMeta | undefined {
    const meta = this.metaCache.get(key);
    if (meta) {
      this.metaCache.delete(key); // most recently used: last in insertion order
      this.metaCache.set(key, meta);
    }
    return meta;
  }

  private cacheMeta(key: string, meta: TensorMeta): void {
    this.metaCache.delete(key);
    if (this.options.metaCacheSize === 0) return;
    this.metaCache.set(key, meta);
    if (this.metaCache.size > this.options.metaCacheSize) this.metaCache.delete(this.metaCache.keys().next().value!);
  }

  private pooled(size: number): Uint8Array | undefined {
    const buffer = this.pool.get(size)?.pop();
    if (buffer) this.pooledBytes -= size;
    return buffer;
  }

  /** Received.release of a tensor over buffer: gives it back to the pool once. */
  private releaser(buffer: Uint8Array): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.giveBack(buffer);
    };
  }

  private giveBack(buffer: Uint8Array): void {
    const size = buffer.byteLength;
    if (this.closed || size === 0 || this.pooledBytes + size > this.options.receivePoolBytes) return;
    let free = this.pool.get(size);
    if (!free) this.pool.set(size, (free = []));
    free.push(buffer);
    this.pooledBytes += size;
  }

  /** Bytes of released receive buffers held for reuse (at most receivePoolBytes). */
  get receivePoolBytes(): number {
    return this.pooledBytes;
  }

  /** Push mailboxes their senders accepted: keys whose recvs ask for nothing (see pushBufferBytes). */
  get pushMailboxes(): number {
    return this.inboxes.active;
  }

  /** Meta entries cached now (bounded by metaCacheSize). */
  get metaCacheEntries(): number {
    return this.metaCache.size;
  }

  /** Steps this manager keeps: the ones find() returned and not cleaned up, and those peers' waiting requests name. */
  get stepCount(): number {
    return this.steps.size;
  }

  /**
   * Sender side: peers' requests held now (parked until their send, or holding a copy for the
   * re-request); of one node if given, then at most maxRequestsPerPeer.
   */
  heldRequests(nodeId?: string): number {
    return nodeId === undefined ? this.serving.size : this.serving.heldBy(nodeId);
  }

  // ---- control messages

  private onMessage(m: ControlMessage, sender: string): void {
    // A message counts only from the node it names: the one its connection was set up with
    // (authenticated with `auth`). Another node could otherwise answer, fail or withdraw
    // requests that are not its own.
    if (m.from !== sender) {
      this.counters.forged++;
      return;
    }
    switch (m.kind) {
      case Kind.TensorRequest:
        return this.serve(m);
      case Kind.TensorReRequest:
        return void this.serveReRequest(m);
      case Kind.MetaDataResponse:
        return this.metaArrived(m);
      case Kind.ErrorStatus:
        return this.errorArrived(m);
      case Kind.TensorCancel:
        return this.withdraw(`${m.from}/${m.requestIndex}`, true);
      case Kind.PushAccepted:
        return this.pushAccepted(m);
      case Kind.NotPushed:
        return this.notPushedArrived(m);
      case Kind.PushEnded:
        for (const inbox of this.inboxes.ofPeer(m.from)) this.dropInbox(inbox);
        return;
    }
  }

  private pendingFrom(m: { requestIndex: number; from: string }): PendingRecv | undefined {
    const pending = this.requests.get(m.requestIndex);
    return pending && pending.peer === m.from ? pending : undefined; // answers only from the asked node
  }

  private metaArrived(m: MetaDataResponse): void {
    const pending = this.pendingFrom(m);
    if (!pending) return;
    this.counters.metaResponses++;
    this.cacheMeta(pending.key, m.meta);
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
    this.counters.reRequests++;
    const message: TensorReRequest = { kind: Kind.TensorReRequest, ...this.from(), requestIndex: m.requestIndex, dataVaddr: pending.mailbox!.vaddr };
    this.channel.send(m.from, message).catch((error: Error) => pending.wait.reject(error));
  }

  private errorArrived(m: ErrorStatus): void {
    const pending = this.pendingFrom(m);
    if (!pending) return;
    this.counters.errors++;
    const code: RvmaErrorCode = isRvmaErrorCode(m.code) ? m.code : 'ERR_RVMA_PROTOCOL';
    this.answer(pending, new RvmaError(code, `Rendezvous.recv: the sender ${m.from} failed: ${m.message}`));
  }

  /** Sender side: wait for the local send, then answer with content or meta. */
  private serve(m: TensorRequest): void {
    const id = `${m.from}/${m.requestIndex}`;
    let normal: NormalKey;
    try {
      normal = normalKey(m.key);
      const { parsed } = normal;
      if (!this.tasks.has(parsed.srcTask)) throw invalid('serve', `this endpoint does not host ${parsed.srcTask}`);
      if (parsed.srcIncarnation !== this.endpoint.incarnation) {
        throw new RvmaError('ERR_RVMA_PEER_LOST', `the key names incarnation ${parsed.srcIncarnation}, this node is ${this.endpoint.incarnation}`);
      }
    } catch (error) {
      return this.replyError(m.from, m.requestIndex, error as Error, false);
    }
    if (this.cleaned.has(BigInt(m.stepId))) {
      return this.replyError(m.from, m.requestIndex, new RvmaError('ERR_RVMA_ABORTED', `step ${m.stepId} was cleaned up`), false);
    }
    const key = normal.key; // the sender wrote its keys so: match in that form
    const offer = m.pushVaddr !== 0n && m.cachedMeta ? () => this.acceptPush(m.from, key, m.pushVaddr, m.cachedMeta!) : undefined;
    // Its receiver gave up before the request got here.
    if (this.earlyCancels.delete(id)) return offer?.();
    const stepId = BigInt(m.stepId);
    // A receiver has one recv of a key per step at a time: an earlier request of it was given up
    // (its cancel is still on the way). A request index used again (a receiver that restarted
    // under the same node id) supersedes the same way. Withdrawn before the step is looked up:
    // a step only that request held goes with it.
    const earlier = this.serving.ofRecv(m.from, stepId, key);
    if (earlier) this.withdraw(earlier, false);
    if (this.serving.get(id)) this.withdraw(id, false);
    if (this.serving.heldBy(m.from) >= this.options.maxRequestsPerPeer) {
      // Refused, not parked: what a peer can make this node hold (and the steps its requests
      // name) stays bounded, whoever it is. Nothing of anyone else's changes.
      this.counters.refused++;
      const why = `${m.from} already has ${this.options.maxRequestsPerPeer} requests waiting here (maxRequestsPerPeer)`;
      return this.replyError(m.from, m.requestIndex, new RvmaError('ERR_RVMA_OVERFLOW', why), false);
    }
    const rendezvous = this.stepOf(stepId, true);
    const serving: Serving = { from: m.from, stepId, key, rendezvous };
    serving.parked = (error, item) => {
      serving.parked = undefined;
      if (error) {
        this.forget(id);
        return this.replyError(m.from, m.requestIndex, error, true);
      }
      this.respond(id, serving, m, item!);
    };
    this.serving.add(id, serving);
    rendezvous.recvLocal(key, serving.parked);
    offer?.(); // after this request took its own step's tensor
  }

  private respond(id: string, serving: Serving, m: TensorRequest, item: Received): void {
    const content = item.isDead ? new Uint8Array(0) : encodeContent(item.tensor);
    const meta = metaOf(item.tensor, item.isDead, content);
    if (meta.isDead || meta.byteSize === 0) {
      this.forget(id);
      return this.replyMeta(m, meta, null);
    }
    // A validating sender always answers with meta: its checksum must travel.
    if (!this.options.validate && m.dataVaddr !== 0n && sameMeta(m.cachedMeta ?? undefined, meta)) {
      this.forget(id);
      this.counters.directPuts++;
      return void this.putContent(m.from, m.requestIndex, serving, item, m.dataVaddr, content);
    }
    // The receiver must reallocate first: keep a copy, since the caller may reuse its tensor
    // once its send is matched (the direct path above reads the caller's memory in place).
    serving.clone = Uint8Array.from(content);
    serving.item = { tensor: cloneTensor(item.tensor, serving.clone, meta), isDead: false };
    this.replyMeta(m, meta, this.options.validate ? crc32(serving.clone) : null);
  }

  private async serveReRequest(m: TensorReRequest): Promise<void> {
    const id = `${m.from}/${m.requestIndex}`;
    const serving = this.serving.get(id);
    if (!serving?.clone) {
      return this.replyError(m.from, m.requestIndex, new RvmaError('ERR_RVMA_PROTOCOL', 'no content is held for that request'), false);
    }
    this.forget(id);
    this.counters.clonePuts++;
    await this.putContent(m.from, m.requestIndex, serving, serving.item!, m.dataVaddr, serving.clone);
  }

  private async putContent(to: string, requestIndex: number, serving: Serving, item: Received, vaddr: bigint, content: Uint8Array): Promise<void> {
    this.options.beforeContentPut?.(serving.key, content);
    try {
      await this.endpoint.put(to, vaddr, content, { timeout: this.options.sendTimeoutMs });
      this.counters.bytesSent += content.byteLength;
    } catch (error) {
      // The receiver gave up and closed its mailbox: the tensor is still this step's to give.
      if (error instanceof RvmaError && error.code === 'ERR_RVMA_NO_MAILBOX' && serving.rendezvous.restore(serving.key, item)) {
        this.counters.withdrawn++;
      }
      this.replyError(to, requestIndex, error as Error, true);
    }
  }

  /**
   * Sender side: a request its receiver gave up (told, or implied by a newer request of the same
   * recv). Parked: it leaves the table. Answered with meta: the tensor goes back to the step.
   * Unknown (`told`): remembered, since the request may arrive after its cancel.
   */
  private withdraw(id: string, told: boolean): void {
    const s = this.serving.get(id);
    if (!s) {
      if (!told) return;
      this.earlyCancels.add(id);
      if (this.earlyCancels.size > EARLY_CANCELS_KEPT) this.earlyCancels.delete(this.earlyCancels.values().next().value!);
      return;
    }
    this.forget(id);
    this.counters.withdrawn++;
    if (s.parked) s.rendezvous.cancelLocal(s.key, s.parked);
    else if (s.item) s.rendezvous.restore(s.key, s.item);
  }

  private forget(id: string): void {
    const s = this.serving.delete(id);
    // A step only peers' requests made holds nothing of the application's: once the last of
    // them is gone (served, withdrawn, failed, or its peer lost), so is the step.
    if (s && this.peerSteps.has(s.stepId) && !this.serving.inStep(s.stepId)) {
      this.peerSteps.delete(s.stepId);
      this.steps.delete(s.stepId);
    }
  }

  private replyMeta(m: TensorRequest, meta: TensorMeta, checksum: number | null): void {
    const message: MetaDataResponse = { kind: Kind.MetaDataResponse, ...this.from(), requestIndex: m.requestIndex, meta, checksum };
    this.channel.send(m.from, message).catch(() => {
      // Never told, the receiver cannot ask for the copy: the tensor goes back to its step.
      const id = `${m.from}/${m.requestIndex}`;
      const s = this.serving.get(id);
      this.forget(id);
      if (s?.item) s.rendezvous.restore(s.key, s.item);
    });
  }

  /**
   * held: the answer of a request this node held, so bounded by maxRequestsPerPeer already; it
   * always goes. Otherwise (a refusal, a malformed or stale request) a peer could provoke any
   * number: the channel bounds them while they wait to be accepted (see control.ts).
   */
  private replyError(to: string, requestIndex: number, error: Error, held: boolean): void {
    const code = error instanceof RvmaError ? error.code : 'ERR_RVMA_ABORTED';
    const message: ErrorStatus = { kind: Kind.ErrorStatus, ...this.from(), requestIndex, code, message: error.message };
    this.channel.send(to, message, !held).catch(() => {}); // the receiver is gone or its own timeout fires
  }

  // ---- push (see push.ts)

  /** Receiver side: opens and posts the key's push mailbox; its vaddr goes in the request. */
  private openInbox(key: string, peer: string, meta: TensorMeta): bigint {
    const mailbox = this.endpoint.openDynamicMailbox({ epoch: 'ops', threshold: 1, maxBuffers: PUSH_BUFFERS, allow: [peer] });
    const inbox: Inbox = { key, peer, meta, mailbox, active: false, posted: 0, waiting: new Set() };
    this.repost(inbox);
    mailbox.listen((c) => this.pushArrived(inbox, c.buffer, c.bytes));
    this.inboxes.add(inbox);
    return mailbox.vaddr;
  }

  /** Posts the push mailbox's buffers again, within what a key may hold (PUSH_HELD_MAX). */
  private repost(inbox: Inbox): void {
    const size = pushBufferBytes(inbox.meta);
    while (!this.closed && !inbox.mailbox.closed && inbox.posted < PUSH_BUFFERS && inbox.posted + inbox.waiting.size < PUSH_HELD_MAX) {
      inbox.mailbox.post(this.pooled(size) ?? freshBuffer(size));
      inbox.posted++;
    }
  }

  /** A pushed content no longer waits in its step (taken by its recv, or the step aborted). */
  private pushedTaken(key: string, step: bigint): void {
    const inbox = this.inboxes.get(key);
    if (inbox?.waiting.delete(step)) this.repost(inbox);
  }

  private pushAccepted(m: PushAccepted): void {
    const inbox = this.inboxes.get(m.key);
    if (inbox && inbox.peer === m.from && inbox.mailbox.vaddr === m.pushVaddr) inbox.active = true;
  }

  /** Receiver side: a pushed content landed; it answers its recv, or waits in its step for one. */
  private pushArrived(inbox: Inbox, buffer: Uint8Array, bytes: number): void {
    const size = pushBufferBytes(inbox.meta);
    inbox.posted--;
    const step = pushedStep(buffer, bytes);
    if (step === undefined || bytes !== size) {
      // Not what was offered: whatever it was, the recv of the step it names asks for its tensor.
      this.counters.errors++;
      this.giveBack(buffer);
      this.repost(inbox);
      if (step !== undefined) this.mustAsk(inbox.key, step.toString(), inbox.peer);
      return;
    }
    if (this.closed || this.cleaned.has(step)) {
      this.giveBack(buffer);
      return this.repost(inbox);
    }
    this.counters.pushesReceived++;
    this.counters.bytesReceived += inbox.meta.byteSize;
    const item: Received = {
      tensor: tensorOf(inbox.meta, buffer.subarray(PUSH_HEADER_BYTES, size)),
      isDead: false,
      release: this.releaser(buffer),
    };
    const index = this.receiving.get(`${step};${inbox.key}`);
    const pending = index === undefined ? undefined : this.requests.get(index);
    if (pending) {
      // A recv that asked meanwhile (it began before the push mailbox was accepted): withdrawn.
      if (pending.asked && !pending.answered) {
        this.channel.send(inbox.peer, { kind: Kind.TensorCancel, ...this.from(), requestIndex: index! }).catch(() => {});
      }
      this.repost(inbox);
      return this.answer(pending, undefined, item);
    }
    const rendezvous = this.stepOf(step);
    if (!rendezvous.restore(inbox.key, item, false)) {
      this.counters.errors++; // a second push of one step's key, or the step aborted: dropped
      this.giveBack(buffer);
    } else if (rendezvous.holdsSent(inbox.key)) {
      inbox.waiting.add(step); // parked until its recv comes
    }
    this.repost(inbox);
  }

  /** Receiver side: the sender kept a step's tensor of a pushed key; its recv asks for it. */
  private notPushedArrived(m: NotPushed): void {
    if (m.dropped) {
      const inbox = this.inboxes.get(m.key);
      if (inbox && inbox.peer === m.from) {
        // The new meta first: the recvs asking now size their buffers for it (no meta response).
        if (m.meta && !this.options.validate) this.cacheMeta(m.key, m.meta);
        this.dropInbox(inbox);
      }
    }
    this.mustAsk(m.key, m.stepId, m.from);
  }

  private mustAsk(key: string, stepId: string, peer: string): void {
    const receiving = `${stepId};${key}`;
    const index = this.receiving.get(receiving);
    const pending = index === undefined ? undefined : this.requests.get(index);
    if (pending) {
      if (!pending.asked && pending.peer === peer) this.startRequest(index!, pending);
      return;
    }
    this.notPushed.add(receiving);
    if (this.notPushed.size > NOT_PUSHED_KEPT) this.notPushed.delete(this.notPushed.values().next().value!);
  }

  /** Receiver side: the sender stopped pushing the key; recvs waiting for a push ask instead. */
  private dropInbox(inbox: Inbox): void {
    this.inboxes.remove(inbox);
    for (const [index, pending] of [...this.requests]) {
      if (pending.key === inbox.key && !pending.asked && pending.peer === inbox.peer) this.startRequest(index, pending);
    }
  }

  /**
   * Sender side: a receiver's push mailbox for the key; later sends of it go there at once, and so
   * do the ones parked already (the receiver, once it hears of the acceptance, asks for none).
   */
  private acceptPush(peer: string, key: string, vaddr: bigint, meta: TensorMeta): void {
    const current = this.pushRoutes.get(key);
    if (current && current.peer === peer && current.vaddr === vaddr) return;
    if (!this.pushRoutes.accept(key, { peer, vaddr, meta })) return;
    const message: PushAccepted = { kind: Kind.PushAccepted, ...this.from(), key, pushVaddr: vaddr };
    // Bounded: a peer may offer again and again (with requests it cancelled first, held nowhere).
    this.channel.send(peer, message, true).catch(() => {}); // unaccepted, the receiver keeps asking
    for (const rendezvous of this.steps.values()) {
      const parked = rendezvous.takeSent(key);
      if (parked && !this.push(rendezvous, key, parked)) rendezvous.restore(key, parked, false);
    }
  }

  /**
   * Sender side, from Rendezvous.send with no recv waiting: puts the tensor into its receiver's
   * push mailbox. False when the key is not pushed (or this tensor cannot be): it is parked for a
   * request then. A push that fails brings the tensor back to its step, for a request.
   */
  private push(rendezvous: Rendezvous, key: string, item: Received): boolean {
    const route = this.pushRoutes.get(key);
    if (!route || this.closed) return false;
    const step = rendezvous.stepId;
    const content = item.isDead || item.tensor.dtype === 'string' ? undefined : encodeContent(item.tensor);
    const meta = content && metaOf(item.tensor, false, content);
    if (!meta || !sameMeta(route.meta, meta)) {
      // Another meta than the receiver's buffers were sized for: told with it, the receiver asks
      // with that meta and offers a push mailbox for it at once.
      this.pushRoutes.drop(key, route);
      this.tellNotPushed(route.peer, key, step, true, meta);
      return false;
    }
    this.options.beforeContentPut?.(key, content);
    this.counters.pushes++;
    this.endpoint.put(route.peer, route.vaddr, [pushHeader(step), content], { timeout: this.options.sendTimeoutMs }).then(
      () => {
        this.counters.bytesSent += content.byteLength;
      },
      (error: unknown) => {
        // Full (the receiver is behind): kept for a request. Gone or refused: no more pushes.
        const full = error instanceof RvmaError && error.code === 'ERR_RVMA_NO_BUFFER';
        if (!full) this.pushRoutes.drop(key, route);
        this.counters.pushes--;
        rendezvous.restore(key, item, false);
        this.tellNotPushed(route.peer, key, step, !full);
      },
    );
    return true;
  }

  private tellNotPushed(peer: string, key: string, step: bigint, dropped: boolean, meta?: TensorMeta): void {
    this.counters.notPushed++;
    const message: NotPushed = { kind: Kind.NotPushed, ...this.from(), key, stepId: step.toString(), dropped, ...(meta ? { meta } : {}) };
    this.channel.send(peer, message).catch(() => {}); // the receiver is gone, or its recv times out
  }

  private peerLost(nodeId: string, reason: string): void {
    for (const [task, record] of [...this.senders]) if (record.nodeId === nodeId) this.senders.delete(task);
    for (const inbox of this.inboxes.ofPeer(nodeId)) this.inboxes.remove(inbox);
    this.pushRoutes.dropPeer(nodeId);
    const error = new RvmaError('ERR_RVMA_PEER_LOST', `Rendezvous.recv: the sending node ${nodeId} was lost (${reason})`);
    for (const pending of [...this.requests.values()]) if (pending.peer === nodeId) this.answer(pending, error);
    for (const [id, s] of this.serving.ofPeer(nodeId)) {
      this.forget(id);
      if (s.parked) s.rendezvous.cancelLocal(s.key, s.parked);
    }
  }

  private from(): { from: string; fromIncarnation: string } {
    return { from: this.endpoint.nodeId, fromIncarnation: this.endpoint.incarnation };
  }

  private assertOpen(call: string): void {
    if (this.closed) throw new RvmaError('ERR_RVMA_CLOSED', `RendezvousMgr.${call}: the manager is closed`);
  }
}

/** The tensor over the sender's clone of its content: what goes back if the receiver gives up. */
function cloneTensor(tensor: Tensor, clone: Uint8Array, meta: TensorMeta): Tensor {
  return tensor.dtype === 'string' ? tensor : tensorOf(meta, clone);
}

/** The tensor over received bytes (no copy); strings are decoded. */
function tensorOf(meta: TensorMeta, bytes: Uint8Array): Tensor {
  if (meta.dtype === 'string') return { dtype: 'string', shape: meta.shape, data: meta.isDead ? [] : decodeStrings(meta.shape, bytes) };
  return { dtype: meta.dtype, shape: meta.shape, data: viewAs(meta.dtype, bytes) };
}

/**
 * Memory for a tensor no released buffer fits. Below a page an ordinary array: native page-aligned
 * memory would cost a page and a finalizer for a few bytes. Above, from the buffer pool, not
 * zeroed: the content overwrites it (fewer bytes fail the recv). Bytes a sender skipped with
 * overlapping puts would show this process's own earlier data, to this process only.
 */
function freshBuffer(size: number): Uint8Array {
  return size < SMALL_TENSOR_BYTES ? new Uint8Array(size) : allocUnzeroed(size);
}
