// A ring of endpoints for pipeline-parallel work: ranks from the directory, frames to the next
// and previous rank as gathered puts into posted buffers (ordered, flow-controlled by credits,
// read in place), typed control records on a mailbox of their own, around() with a real
// timeout, and a generation that fails as a whole when a member dies and is re-formed anew.
import { EventEmitter } from 'node:events';
import { Endpoint, type PeerLostInfo } from '../mailbox/endpoint';
import { RvmaError } from '../base/errors';
import { type PutData, checkPutData } from '../mailbox/put-data';
import { checkBytes, checkOptions, checkInteger, invalid } from '../base/validate';
import { Wait, type WaitOptions, parseWaitOptions } from '../base/wait';
import { Generation, type GenerationHost, type RingControlMessage } from './generation';
import { type RingFrame } from './inbound';
import { MembershipClaim, leaveGroup, markFailed } from './membership';
import { CONTROL_WAITING_MAX, type RingCounts, type RingJoinOptions, type RingOptions, type RingReformOptions, parseJoinOptions, parseReformOptions, zeroCounts } from './options';
import { type RingControl, checkControl } from './records';

export interface RecvOptions extends WaitOptions {
  /** Copy the frame's data here and release its buffer at once (the frame's data is then a view of it). */
  into?: Uint8Array;
}

export interface SendControlOptions extends WaitOptions {
  /** The rank to send to, or 'next' / 'prev'. Default 'next'. */
  to?: number | 'next' | 'prev';
}

/** Ring.stats(): what the ring moved, and the wake-ups of its endpoint. */
export interface RingStats extends RingCounts {
  /** The endpoint's EndpointStats.wakeups (all its traffic, not the ring's alone). */
  wakeups: number;
  /** The endpoint's EndpointStats.progressWakeups. */
  progressWakeups: number;
}

/** Emitted as 'failed': the generation ended because a member was lost (or left). */
export interface RingFailure {
  generation: number;
  error: RvmaError;
  /** The member whose loss ended it, when known. */
  lost: string | undefined;
}

// Reserved vaddrs of ring mailboxes: four per generation (control, from prev, from next, credits).
const BASE_FIRST = 0x100n;
const BASE_LAST = 0xfffcn;
const nextBase = new WeakMap<Endpoint, bigint>();

/** The events a Ring emits, with their listeners' arguments (docs/ring.md). */
export interface RingEvents {
  failed: [failure: RingFailure];
}

// Names checked against the map's keys, so a misspelt one is reported by name (see Endpoint).
export interface Ring {
  on<K extends keyof RingEvents>(event: K, listener: (...args: RingEvents[K]) => void): this;
  once<K extends keyof RingEvents>(event: K, listener: (...args: RingEvents[K]) => void): this;
  off<K extends keyof RingEvents>(event: K, listener: (...args: RingEvents[K]) => void): this;
}

export class Ring extends EventEmitter<RingEvents> {
  private current: Generation | undefined;
  /** A join or reform is claiming its ranks: ring operations wait for the new generation. */
  private forming = false;
  private readonly messages: RingControlMessage[] = [];
  private readonly controlWaits: Wait<RingControlMessage>[] = [];
  private readonly host: GenerationHost;
  private readonly watching = new AbortController();
  private readonly onPeerLost = (info: PeerLostInfo): void => this.current?.memberLost(info.nodeId, info.incarnation, `its connection was lost (${info.reason})`);
  private isClosed = false;
  private claim: MembershipClaim | undefined;

  private constructor(
    readonly endpoint: Endpoint,
    private readonly options: RingOptions,
  ) {
    super();
    this.host = {
      endpoint,
      options,
      counts: zeroCounts(),
      deliver: (m) => this.deliver(m),
      failed: (gen, error, lost) => {
        if (gen !== this.current || !gen.formed) return;
        void markFailed(endpoint.directory, options.group, gen.gen);
        // Not from inside the endpoint's delivery of completions: a listener may throw.
        const failure: RingFailure = { generation: gen.gen, error, lost };
        queueMicrotask(() => this.emit('failed', failure));
      },
    };
    endpoint.on('peerLost', this.onPeerLost);
    void this.watchDirectory();
  }

  /**
   * Joins the ring of `group` and resolves once every rank is taken. Ranks and neighbours come
   * from the endpoint's directory (MemoryDirectory for one process, RedisDirectory across hosts).
   */
  static async join(endpoint: Endpoint, options: RingJoinOptions): Promise<Ring> {
    const call = 'Ring.join';
    const o = parseJoinOptions(call, options);
    if (!(endpoint instanceof Endpoint)) throw invalid(call, 'endpoint must be an Endpoint');
    if (endpoint.closed) throw new RvmaError('ERR_RVMA_CLOSED', `${call}: the endpoint is closed`);
    const ring = new Ring(endpoint, o.ring);
    try {
      await ring.form({ rank: o.rank, size: o.size }, o.timeout, o.signal);
    } catch (error) {
      await ring.close();
      throw error;
    }
    return ring;
  }

  get group(): string {
    return this.options.group;
  }
  /** This member's rank, 0 .. size - 1, in the current generation. */
  get rank(): number {
    return this.live().rank;
  }
  get size(): number {
    return this.live().size;
  }
  /** Node id of the next rank (rank + 1, wrapping). */
  get next(): string {
    return this.live().next.nodeId;
  }
  /** Node id of the previous rank. */
  get prev(): string {
    return this.live().prev.nodeId;
  }
  /** Node ids by rank. */
  get members(): string[] {
    return this.live().members.map((m) => m.nodeId);
  }
  /** Counts from 0; each reform() makes a new generation. */
  get generation(): number {
    return this.live().gen;
  }
  /** Why the current generation ended, while it is not re-formed; undefined while it works. */
  get failure(): RvmaError | undefined {
    return this.isClosed ? new RvmaError('ERR_RVMA_CLOSED', 'the ring is closed') : this.current?.failed;
  }
  get closed(): boolean {
    return this.isClosed;
  }
  /**
   * Frames and credit records moved since the ring was joined, and the wake-ups of its endpoint:
   * read it before and after a run to see wake-ups per frame without timing anything.
   */
  stats(): RingStats {
    this.current?.count();
    return { ...this.host.counts, ...this.endpoint.stats() };
  }

  /** Control records dropped in the current generation: malformed, stale, or from a non-member. */
  get droppedControl(): number {
    return this.current?.dropped ?? 0;
  }

  /** Sends a frame to the next rank: data, or [header, data] gathered without a copy of data. */
  sendNext(data: PutData, options?: WaitOptions): Promise<void> {
    return this.send('Ring.sendNext', data, options, (g, h, d, o) => g.sendNext(h, d, o));
  }
  /** Sends a frame to the previous rank. */
  sendPrev(data: PutData, options?: WaitOptions): Promise<void> {
    return this.send('Ring.sendPrev', data, options, (g, h, d, o) => g.sendPrev(h, d, o));
  }
  /** The next frame from the previous rank, in send order. */
  recvPrev(options?: RecvOptions): Promise<RingFrame> {
    return this.recv('Ring.recvPrev', options, (g, o, into) => g.recvPrev(o, into));
  }
  /** The next frame from the next rank (its sendPrev), in send order. */
  recvNext(options?: RecvOptions): Promise<RingFrame> {
    return this.recv('Ring.recvNext', options, (g, o, into) => g.recvNext(o, into));
  }

  /**
   * The next frame from the previous rank if it has arrived (and no recvPrev() waits for it),
   * else undefined, at once: no promise. Throws the ring's failure (ERR_RVMA_PEER_LOST,
   * ERR_RVMA_CLOSED, ...) as recvPrev() would reject with it.
   */
  tryRecvPrev(): RingFrame | undefined {
    return this.live().tryRecvPrev();
  }
  /** The next frame from the next rank if it has arrived, else undefined (see tryRecvPrev). */
  tryRecvNext(): RingFrame | undefined {
    return this.live().tryRecvNext();
  }

  /**
   * Up to `max` frames from the previous rank that have arrived, in order, at once: no promise,
   * and an empty array when none has (or a recvPrev() waits for the next one). Throws as
   * tryRecvPrev() does.
   */
  recvManyPrev(max: number): RingFrame[] {
    checkInteger('Ring.recvManyPrev', 'max', max, 1, 2 ** 32);
    return this.live().recvManyPrev(max);
  }
  /** Up to `max` frames from the next rank that have arrived (see recvManyPrev). */
  recvManyNext(max: number): RingFrame[] {
    checkInteger('Ring.recvManyNext', 'max', max, 1, 2 ** 32);
    return this.live().recvManyNext(max);
  }

  /** The next control record, or undefined at once when none is waiting. */
  pollControl(): RingControlMessage | undefined {
    return this.messages.shift();
  }

  /** The next control record, waiting for one. */
  control(options?: WaitOptions): Promise<RingControlMessage> {
    try {
      const o = parseWaitOptions('Ring.control', options);
      if (this.isClosed) throw new RvmaError('ERR_RVMA_CLOSED', 'Ring.control: the ring is closed');
      const ready = this.messages.shift();
      if (ready) return Promise.resolve(ready);
      const wait: Wait<RingControlMessage> = new Wait<RingControlMessage>(
        'Ring.control',
        o,
        (w) => {
          const at = this.controlWaits.indexOf(w);
          if (at >= 0) this.controlWaits.splice(at, 1);
        },
        this.endpoint.holdLoop,
      );
      if (!wait.done) this.controlWaits.push(wait);
      return wait.promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Sends a control record to one member (default the next rank). */
  sendControl(record: RingControl, options?: SendControlOptions): Promise<void> {
    const call = 'Ring.sendControl';
    try {
      const checked = checkControl(record, (what) => invalid(call, what));
      const o = checkOptions<SendControlOptions>(call, options, ['to', 'timeout', 'signal']);
      const wait = parseWaitOptions(call, { timeout: o.timeout, signal: o.signal });
      const g = this.live();
      const to = o.to === undefined || o.to === 'next' ? g.next.rank : o.to === 'prev' ? g.prev.rank : checkInteger(call, 'to', o.to, 0, g.size - 1);
      return g.sendControl(to, checked, wait);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Sends a control record around the ring: every other rank receives it (control()), applies it
   * and calls pass(); resolves when the last one's acknowledgement is back here. Rejects with
   * ERR_RVMA_TIMEOUT when that takes longer than `timeout`, ERR_RVMA_PEER_LOST when the ring fails.
   */
  around(record: RingControl, options?: WaitOptions): Promise<void> {
    const call = 'Ring.around';
    try {
      const checked = checkControl(record, (what) => invalid(call, what));
      return this.live().around(checked, parseWaitOptions(call, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Builds the ring anew from the members still alive (the failed generation's, in their old
   * order), with new ranks; with `size` larger than that, newcomers fill the rest (Ring.join).
   * Frames and records of the old generation not yet received are dropped.
   */
  async reform(options?: RingReformOptions): Promise<void> {
    const call = 'Ring.reform';
    const o = parseReformOptions(call, options);
    if (this.isClosed) throw new RvmaError('ERR_RVMA_CLOSED', `${call}: the ring is closed`);
    if (this.forming) throw invalid(call, 'the ring is already being formed');
    const old = this.live();
    const survivors = old.members.filter((m) => !old.lost.has(m.nodeId));
    const at = survivors.findIndex((m) => m.nodeId === this.endpoint.nodeId);
    const preferRank = at >= 0 ? at : undefined;
    old.leave('it re-forms the ring', new RvmaError('ERR_RVMA_PEER_LOST', `ring generation ${old.gen} was left to re-form the ring`));
    this.messages.length = 0; // the old generation's records not yet received (its ranks are gone)
    await this.claim?.release();
    await this.form({ gen: old.gen + 1, preferRank, size: o.size, defaultSize: survivors.length }, o.timeout, o.signal);
  }

  /** Leaves the ring: the other members' ring operations fail with ERR_RVMA_PEER_LOST. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.endpoint.off('peerLost', this.onPeerLost);
    this.watching.abort();
    const error = new RvmaError('ERR_RVMA_CLOSED', 'the ring is closed');
    this.current?.leave('it closed', error);
    for (const w of this.controlWaits.splice(0)) w.reject(error);
    this.messages.length = 0;
    await this.claim?.release();
    await leaveGroup(this.endpoint.directory, this.options.group, this.endpoint.nodeId);
  }

  private async form(claim: { gen?: number; rank?: number; preferRank?: number; size?: number; defaultSize?: number }, timeout: number, signal?: AbortSignal): Promise<void> {
    const started = Date.now();
    const gen = this.openGeneration();
    this.current = gen;
    this.claim = new MembershipClaim(this.endpoint.directory);
    this.forming = true;
    try {
      const membership = await this.claim.claim(
        { group: this.options.group, nodeId: this.endpoint.nodeId, base: gen.base, deadline: started + timeout, signal, ...claim },
        started,
      );
      if (this.isClosed) throw new RvmaError('ERR_RVMA_CLOSED', 'Ring.join: the ring was closed');
      gen.activate(membership);
    } catch (error) {
      gen.leave('it could not join', error as RvmaError);
      await this.claim.release();
      throw error;
    } finally {
      this.forming = false;
    }
  }

  private openGeneration(): Generation {
    for (let tries = 0; ; tries++) {
      let base = nextBase.get(this.endpoint) ?? BASE_FIRST;
      if (base > BASE_LAST) base = BASE_FIRST;
      nextBase.set(this.endpoint, base + 4n);
      try {
        return new Generation(this.host, base);
      } catch (error) {
        const taken = error instanceof RvmaError && error.code === 'ERR_RVMA_MAILBOX_EXISTS';
        if (!taken || tries > Number((BASE_LAST - BASE_FIRST) / 4n)) throw error;
      }
    }
  }

  /** The current generation, once formed; ring operations before that are refused. */
  private live(): Generation {
    if (this.isClosed) throw new RvmaError('ERR_RVMA_CLOSED', 'the ring is closed');
    const g = this.current;
    if (!g || this.forming) throw new RvmaError('ERR_RVMA_PEER_LOST', `ring "${this.options.group}" is being formed`);
    return g;
  }

  private send(call: string, data: PutData, options: WaitOptions | undefined, go: (g: Generation, h: Uint8Array | undefined, d: Uint8Array, o: WaitOptions) => Promise<void>): Promise<void> {
    try {
      const [header, bytes] = checkPutData(call, data);
      return go(this.live(), header, bytes, parseWaitOptions(call, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private recv(call: string, options: RecvOptions | undefined, go: (g: Generation, o: WaitOptions, into?: Uint8Array) => Promise<RingFrame>): Promise<RingFrame> {
    try {
      const o = checkOptions<RecvOptions>(call, options, ['timeout', 'signal', 'into']);
      const into = o.into === undefined ? undefined : checkBytes(call, 'into', o.into);
      return go(this.live(), parseWaitOptions(call, { timeout: o.timeout, signal: o.signal }), into);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private deliver(message: RingControlMessage): void {
    if (this.isClosed) return;
    const wait = this.controlWaits.shift();
    if (wait) wait.resolve(message);
    else if (this.messages.length < CONTROL_WAITING_MAX) this.messages.push(message);
    else this.current?.overflowed(message.from);
  }

  /** A member whose directory record goes (closed, or its lease lapsed) is lost. */
  private async watchDirectory(): Promise<void> {
    try {
      for await (const event of this.endpoint.directory.watch({ signal: this.watching.signal })) {
        if (event.type === 'leave') this.current?.memberLost(event.node.nodeId, event.node.incarnation, 'it left the directory');
      }
    } catch {
      // aborted by close(), or the directory closed: transports still report losses
    }
  }
}
