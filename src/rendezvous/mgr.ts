// The rendezvous manager of one endpoint: it wires the parts below and routes work to them.
// Steps (steps.ts), the control channel (control.ts), and both halves of TensorFlow's verbs
// protocol over mailboxes: the receiver (receiver.ts, push-receiver.ts) and the sender (sender.ts,
// push-sender.ts).
import { Endpoint, type PeerLostInfo } from '../mailbox/endpoint';
import { RvmaError } from '../base/errors';
import { type U64, checkU64, invalid } from '../base/validate';
import type { ManagerContext } from './context';
import { ControlChannel } from './control';
import { type RendezvousCounters, newCounters } from './counters';
import { type ControlMessage, Kind } from './messages';
import { type ManagerOptions, type RendezvousOptions, parseOptions } from './options';
import { Inboxes } from './push';
import { PushSender } from './push-sender';
import { ReceivePool } from './receive-pool';
import { Receiver } from './receiver';
import { type Received, type Rendezvous, type RendezvousHost } from './rendezvous';
import { Sender } from './sender';
import { Steps } from './steps';

export class RendezvousMgr {
  static create(endpoint: Endpoint, options?: RendezvousOptions): RendezvousMgr {
    const call = 'RendezvousMgr.create';
    if (!(endpoint instanceof Endpoint)) throw invalid(call, 'endpoint must be an Endpoint');
    const { tasks, options: checked } = parseOptions(call, endpoint, options);
    return new RendezvousMgr(endpoint, tasks, checked);
  }

  readonly counters: RendezvousCounters = newCounters();
  private readonly steps: Steps;
  private readonly pool: ReceivePool;
  /** The receiver's push mailboxes (see push.ts). */
  private readonly inboxes: Inboxes;
  private readonly receiver: Receiver;
  private readonly pushSender: PushSender;
  private readonly sender: Sender;
  private readonly channel: ControlChannel;
  private readonly onPeerLost = (info: PeerLostInfo) => this.peerLost(info.nodeId, info.reason);
  private closed = false;

  private constructor(
    readonly endpoint: Endpoint,
    private readonly tasks: Set<string>,
    private readonly options: ManagerOptions,
  ) {
    this.steps = new Steps(this.host);
    this.pool = new ReceivePool(options.receivePoolBytes);
    this.inboxes = new Inboxes(options.validate ? 0 : options.pushBufferBytes, Math.min(options.pushMaxTensorBytes, options.maxTensorBytes));
    const control = { ...options, maxWaitingPerPeer: options.maxRequestsPerPeer };
    this.channel = new ControlChannel(
      endpoint,
      control,
      this.counters,
      (m, sender) => this.onMessage(m, sender),
      (error, sender) => this.receiver.badMessage(error, sender),
    );
    const context: ManagerContext = {
      endpoint,
      tasks,
      options,
      counters: this.counters,
      channel: this.channel,
      steps: this.steps,
      pool: this.pool,
      closed: () => this.closed,
      from: () => this.from(),
    };
    this.receiver = new Receiver(context, this.inboxes);
    this.pushSender = new PushSender(context);
    this.sender = new Sender(context, this.pushSender);
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
    return this.steps.of(step); // the application's now: it stays until cleanup
  }

  /** Aborts and drops everything of a step: its pending recvs reject with ERR_RVMA_ABORTED. */
  cleanup(stepId: U64): void {
    const step = checkU64('RendezvousMgr.cleanup', 'stepId', stepId);
    const rendezvous = this.steps.cleanUp(step);
    this.pool.stepCleaned(step);
    if (!rendezvous) return;
    const error = (): Error => new RvmaError('ERR_RVMA_ABORTED', `step ${step} was cleaned up`);
    // The usual case, every transfer of the step done: nothing to fail, so no error built yet.
    if (!this.busyIn(step) && rendezvous.retireIdle(error)) return;
    rendezvous.startAbort(error());
  }

  /** Whether a remote recv or a request being served belongs to the step. */
  private busyIn(step: bigint): boolean {
    return this.receiver.busyIn(step) || this.sender.busyIn(step);
  }

  async close(): Promise<void> {
    await this.shutdown('the rendezvous manager closed');
  }

  private async shutdown(why: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pool.close();
    this.endpoint.off('peerLost', this.onPeerLost);
    this.steps.abortAll(new RvmaError('ERR_RVMA_CLOSED', why));
    this.inboxes.clear();
    // Receivers waiting for pushes from here ask instead, and find the control mailbox closed.
    const pushedTo = this.pushSender.end();
    this.channel.close();
    await Promise.allSettled([...pushedTo].map((peer) => this.channel.send(peer, { kind: Kind.PushEnded, ...this.from() })));
    await this.channel.done;
  }

  // ---- What the step rendezvous ask of the manager (private: not part of the public type, so
  // the shipped declarations need no `implements` of an internal interface).
  private readonly host: RendezvousHost = {
    isLocalTask: (task) => this.tasks.has(task),
    recvRemote: (rendezvous, key, parsed, options, recycle) => {
      const received = this.receiver.recvRemote(rendezvous, key, parsed, options);
      return recycle ?? this.options.recycle ? received.then((item) => this.recycleAtCleanup(rendezvous.stepId, item)) : received;
    },
    push: (rendezvous, key, item) => this.pushSender.push(rendezvous, key, item),
    aborted: (rendezvous, error) => {
      this.receiver.stepAborted(rendezvous.stepId, error);
      this.sender.stepAborted(rendezvous.stepId);
    },
  };

  /** A remote recv's tensor, its buffer recycled when the step is cleaned up (see recycle). */
  private recycleAtCleanup(step: bigint, item: Received): Received {
    if (item.release && !this.steps.wasCleaned(step)) this.pool.releaseAtCleanup(step, item.release);
    return item;
  }

  /** Bytes of released receive buffers held for reuse (at most receivePoolBytes). */
  get receivePoolBytes(): number {
    return this.pool.bytes;
  }

  /** Push mailboxes their senders accepted: keys whose recvs ask for nothing (see pushBufferBytes). */
  get pushMailboxes(): number {
    return this.inboxes.active;
  }

  /** Meta entries cached now (bounded by metaCacheSize). */
  get metaCacheEntries(): number {
    return this.receiver.metaCache.entries;
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
    return this.sender.held(nodeId);
  }

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
        return this.sender.serve(m);
      case Kind.TensorReRequest:
        return void this.sender.serveReRequest(m);
      case Kind.MetaDataResponse:
        return this.receiver.metaArrived(m);
      case Kind.ErrorStatus:
        return this.receiver.errorArrived(m);
      case Kind.TensorCancel:
        return this.sender.withdraw(`${m.from}/${m.requestIndex}`, true);
      case Kind.PushAccepted:
        return this.receiver.push.accepted(m);
      case Kind.NotPushed:
        return this.receiver.push.notPushedArrived(m);
      case Kind.PushEnded:
        return this.receiver.push.ended(m.from);
    }
  }

  private peerLost(nodeId: string, reason: string): void {
    this.receiver.peerLost(nodeId, reason);
    this.pushSender.peerLost(nodeId);
    this.sender.peerLost(nodeId);
  }

  private from(): { from: string; fromIncarnation: string } {
    return { from: this.endpoint.nodeId, fromIncarnation: this.endpoint.incarnation };
  }

  private assertOpen(call: string): void {
    if (this.closed) throw new RvmaError('ERR_RVMA_CLOSED', `RendezvousMgr.${call}: the manager is closed`);
  }
}
