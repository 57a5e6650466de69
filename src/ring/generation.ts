// One generation of a ring: its membership, its four mailboxes (control, frames from prev,
// frames from next, credits), both directions' senders, and the around() waits. A generation
// that loses a member fails as a whole, tells every other member, and is replaced by a new one
// (reform).
import { type Endpoint } from '../mailbox/endpoint';
import { RvmaError } from '../base/errors';
import { type Mailbox } from '../mailbox/mailbox';
import { Wait, type WaitOptions } from '../base/wait';
import { ControlLink } from './control-link';
import { Credits } from './credits';
import { Inbound, type RingFrame } from './inbound';
import { type Member, type Membership } from './membership';
import { CONTROL_SLOTS, CONTROL_WAITING_MAX, type RingCounts, type RingOptions } from './options';
import { Outbound } from './outbound';
import { Kind, type RingControl, type WireRecord, aroundIdOf, decodeRecord, encodeRecord, packRecord } from './records';

/** A control record for the application (ring.pollControl(), ring.control()). */
export interface RingControlMessage {
  readonly record: RingControl;
  /** Rank that sent it (for an around record: the rank before this one). */
  readonly from: number;
  /** For a record travelling with around(): the rank that started it; undefined for sendControl(). */
  readonly origin: number | undefined;
  /** The ring generation it belongs to. */
  readonly generation: number;
  /**
   * Around records: hands the record on to the next rank (or the acknowledgement back to the
   * origin) — call it once the record is applied. Other records: resolves at once. Only the
   * first call sends.
   */
  pass(options?: WaitOptions): Promise<void>;
}

export interface GenerationHost {
  readonly endpoint: Endpoint;
  readonly options: RingOptions;
  /** The ring's counts, carried over from one generation to the next. */
  readonly counts: RingCounts;
  deliver(message: RingControlMessage): void;
  /** The generation failed (once); `lost` names the member gone, if one is. */
  failed(gen: Generation, error: RvmaError, lost: string | undefined): void;
}

const CONTROL_SEND_TIMEOUT_MS = 10_000;
const NO_TIMEOUT: WaitOptions = { timeout: Infinity };
/** Nothing waits on the acknowledgement at all: it must not wake the neighbour. */
const LATE = { lazy: 'late' } as const;
const QUIET = { quiet: true } as const;

export class Generation {
  private readonly control: Mailbox;
  private readonly credits: Credits;
  private readonly fromPrev: Inbound;
  private readonly fromNext: Inbound;
  private toNext!: Outbound;
  private toPrev!: Outbound;
  /** around() records (AROUND, ACK) to the next rank. */
  private aroundLink: ControlLink | undefined;
  private membership: Membership | undefined;
  private readonly early: [WireRecord, string][] = [];
  private readonly arounds = new Map<number, Wait<void>>();
  private nextAroundId = 1;
  private failure: RvmaError | undefined;
  /** Node ids known to be gone: left out by reform. */
  readonly lost = new Set<string>();
  /** Control records dropped: malformed, from another generation or from a non-member. */
  dropped = 0;

  constructor(
    private readonly host: GenerationHost,
    readonly base: bigint,
  ) {
    const { endpoint, options } = host;
    const open = (vaddr: bigint, maxBuffers: number, reportSender = false, allow?: string[]): Mailbox =>
      endpoint.openAt('Ring.join', vaddr, { epoch: 'ops', threshold: 1, maxBuffers, reportSender, allow });
    // Control records say who sent them; the transport says it too, and the two must agree.
    this.control = open(base, CONTROL_SLOTS, true);
    const opened: { close(): void }[] = [this.control];
    try {
      this.credits = new Credits(endpoint, base + 3n);
      opened.push(this.credits);
      const inbound = (vaddr: bigint, what: string): Inbound => {
        const events = { broken: (e: RvmaError) => this.fail(e, undefined), hold: endpoint.holdLoop };
        // No frame may come before this member grants credits (Inbound.start names the sender):
        // until then its own node, which sends none, is the only one allowed.
        const mailbox = open(vaddr, options.slots, false, [endpoint.nodeId]);
        opened.push(mailbox);
        return new Inbound(mailbox, options.slots, options.frameBytes, what, events);
      };
      this.fromPrev = inbound(base + 1n, 'Ring.recvPrev');
      this.fromNext = inbound(base + 2n, 'Ring.recvNext');
    } catch (error) {
      for (const o of opened) o.close();
      throw error;
    }
    for (let i = 0; i < CONTROL_SLOTS; i++) this.control.post(options.controlBytes);
    this.control.listen((c) => this.receiveControl(c.buffer, c.bytes, c.sender ?? ''));
  }

  /** Whether the ring of this generation was complete (activate() ran). */
  get formed(): boolean {
    return this.membership !== undefined;
  }
  get gen(): number {
    return this.membership!.gen;
  }
  get rank(): number {
    return this.membership!.rank;
  }
  get members(): readonly Member[] {
    return this.membership!.members;
  }
  get size(): number {
    return this.membership!.size;
  }
  get failed(): RvmaError | undefined {
    return this.failure;
  }
  private member(offset: number): Member {
    const m = this.membership!;
    return m.members[(m.rank + offset + m.size) % m.size];
  }
  get next(): Member {
    return this.member(1);
  }
  get prev(): Member {
    return this.member(-1);
  }

  /** The ring is complete: senders point at the neighbours, credits go out, early records count. */
  activate(membership: Membership): void {
    this.membership = membership;
    const { endpoint } = this.host;
    const lost = (who: Member) => (e: RvmaError) => this.memberLost(who.nodeId, who.incarnation, e.message);
    const { counts } = this.host;
    this.toNext = new Outbound(endpoint, this.next, this.next.base + 1n, 'Ring.sendNext', lost(this.next), counts, this.credits, 0);
    this.toPrev = new Outbound(endpoint, this.prev, this.prev.base + 2n, 'Ring.sendPrev', lost(this.prev), counts, this.credits, 1);
    const next = this.next;
    this.aroundLink = new ControlLink(endpoint, next.nodeId, next.base, (error, bytes) => this.aroundRefused(next, error, bytes));
    // From here on only members put into this generation's mailboxes (frames: only the
    // neighbour of their direction, see Inbound.start): a stranger is refused before its put
    // takes a buffer that records or credits need.
    this.credits.allowOnly([...new Set([this.next.nodeId, this.prev.nodeId])]);
    if (!this.control.closed) this.control.setAllow([...new Set(membership.members.map((m) => m.nodeId))]);
    // Frames from prev are prev's sendNext (direction 0 at prev); from next, next's sendPrev.
    this.fromPrev.start(endpoint, this.prev, this.prev.base + 3n, 0, this.base);
    this.fromNext.start(endpoint, this.next, this.next.base + 3n, 1, this.base);
    // The neighbours learn which instance of this member runs the generation (see handle()).
    for (const neighbour of new Set([this.next, this.prev])) {
      if (neighbour.rank !== this.rank) this.sendRecord(neighbour, { kind: Kind.Joined }, NO_TIMEOUT, LATE).catch(() => undefined);
    }
    for (const [record, sender] of this.early.splice(0)) this.handle(record, sender);
  }

  /** Adds what the native halves counted since the last call to the ring's counts. */
  count(): void {
    const { counts } = this.host;
    this.fromPrev.count(counts);
    this.fromNext.count(counts);
    this.credits.count(counts);
  }

  sendNext(header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> {
    return this.failure ? Promise.reject(this.failure) : this.toNext.send(header, data, options);
  }
  sendPrev(header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> {
    return this.failure ? Promise.reject(this.failure) : this.toPrev.send(header, data, options);
  }
  recvPrev(options: WaitOptions, into?: Uint8Array): Promise<RingFrame> {
    return this.fromPrev.recv(options, into);
  }
  recvNext(options: WaitOptions, into?: Uint8Array): Promise<RingFrame> {
    return this.fromNext.recv(options, into);
  }
  tryRecvPrev(): RingFrame | undefined {
    return this.fromPrev.tryRecv();
  }
  tryRecvNext(): RingFrame | undefined {
    return this.fromNext.tryRecv();
  }
  recvManyPrev(max: number): RingFrame[] {
    return this.fromPrev.tryRecvMany(max);
  }
  recvManyNext(max: number): RingFrame[] {
    return this.fromNext.tryRecvMany(max);
  }

  async sendControl(to: number, record: RingControl, options: WaitOptions): Promise<void> {
    if (this.failure) throw this.failure;
    await this.sendRecord(this.members[to], { kind: Kind.Direct, record }, options);
  }

  around(record: RingControl, options: WaitOptions): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.size === 1) return Promise.resolve(); // nobody else to apply it
    const id = this.nextAroundId;
    this.nextAroundId = id === 0xffff_ffff ? 1 : id + 1; // the record's id is 32 bits
    const wait = new Wait<void>('Ring.around', options, () => this.arounds.delete(id), this.host.endpoint.holdLoop);
    if (wait.done) return wait.promise;
    this.arounds.set(id, wait);
    // What is waited for is the ACK record, not this put's acknowledgement.
    try {
      this.aroundLink!.send(this.encode({ kind: Kind.Around, id, origin: this.rank, record }));
    } catch (error) {
      wait.reject(error as Error);
    }
    return wait.promise;
  }

  /**
   * The next rank refused an around() record: one it had no free buffer for goes again through a
   * put that retries; one too large for it fails the origin's around() (at the origin now, at
   * others by its timeout); anything else, or a record no longer known, ends the generation.
   */
  private aroundRefused(to: Member, error: RvmaError, bytes: Uint8Array | undefined): void {
    if (this.failure) return;
    const ours = bytes && aroundIdOf(bytes, this.rank);
    const own = ours === undefined ? undefined : this.arounds.get(ours);
    if (bytes && error.code === 'ERR_RVMA_NO_BUFFER') {
      this.putRecord(to, bytes).catch((e: Error) => own?.reject(e));
    } else if (bytes && error.code === 'ERR_RVMA_TOO_LARGE') {
      own?.reject(error);
    } else {
      this.memberLost(to.nodeId, to.incarnation, error.message);
    }
  }

  /** A member is gone (a transport or the directory said so): the generation fails. */
  memberLost(nodeId: string, incarnation: string | undefined, reason: string): void {
    const m = this.membership?.members.find((x) => x.nodeId === nodeId && (incarnation === undefined || x.incarnation === incarnation));
    if (!m || this.failure) return;
    this.lost.add(nodeId);
    const error = new RvmaError('ERR_RVMA_PEER_LOST', `ring generation ${this.gen}: rank ${m.rank} (node "${nodeId}") was lost: ${reason}`);
    this.fail(error, nodeId);
    // Only neighbours notice a death by themselves: everybody else hears it from them. The lost
    // member hears it too: a directory may report a live member gone to us alone, and it must
    // not wait on in a generation nobody else runs (if it is dead, the put just fails).
    for (const other of this.members) {
      if (other.rank !== this.rank) this.tellFailed(other, nodeId, reason);
    }
  }

  private tellFailed(to: Member, lost: string, reason: string): void {
    this.sendRecord(to, { kind: Kind.Failed, lost, reason }, undefined, QUIET).catch(() => undefined);
  }

  /** Leaves the generation: the others hear that this member is gone. */
  leave(reason: string, error: RvmaError): void {
    if (this.membership && !this.failure) {
      for (const other of this.members) {
        if (other.rank !== this.rank) this.tellFailed(other, this.host.endpoint.nodeId, reason);
      }
    }
    this.fail(error, undefined);
    this.control.close();
  }

  /**
   * Another member counts this one out (its directory said we were gone, or it saw another
   * instance of us): the generation is over here too, and this member re-forms as a newcomer.
   */
  private declaredLost(by: Member, reason: string): void {
    const self = this.host.endpoint.nodeId;
    this.lost.add(self);
    this.fail(new RvmaError('ERR_RVMA_PEER_LOST', `ring generation ${this.gen}: rank ${by.rank} (node "${by.nodeId}") declared this member lost: ${reason}`), self);
  }

  /** More records wait unread here than a member may hold: this member leaves the generation. */
  overflowed(from: number): void {
    if (!this.membership || this.failure) return;
    const reason = `${CONTROL_WAITING_MAX} of its control records were waiting unread (control(), pollControl())`;
    const error = new RvmaError('ERR_RVMA_OVERFLOW', `ring generation ${this.gen}: ${CONTROL_WAITING_MAX} control records wait unread here; rank ${from}'s next one ended the generation`);
    this.lost.add(this.host.endpoint.nodeId);
    this.leave(reason, error);
  }

  private fail(error: RvmaError, lost: string | undefined): void {
    if (this.failure) return;
    this.failure = error;
    this.count();
    this.fromPrev.fail(error);
    this.fromNext.fail(error);
    this.credits.close();
    this.toNext?.fail(error);
    this.toPrev?.fail(error);
    this.aroundLink?.close();
    for (const wait of [...this.arounds.values()]) wait.reject(error);
    this.host.failed(this, error, lost);
  }

  private receiveControl(buffer: Uint8Array, bytes: number, sender: string): void {
    let record: WireRecord | undefined;
    try {
      record = decodeRecord(buffer.subarray(0, bytes));
    } catch {
      this.dropped++;
    }
    if (!this.control.closed) this.control.post(buffer);
    if (!record) return;
    if (this.membership) this.handle(record, sender);
    else if (this.early.length < 1024) this.early.push([record, sender]);
    else this.dropped++;
  }

  private handle(r: WireRecord, sender: string): void {
    const from = this.members[r.fromRank];
    if (r.gen !== this.gen || !from || sender !== from.nodeId) {
      this.dropped++;
      return;
    }
    if (BigInt(r.base) !== from.base) {
      // The member's node, but mailboxes this generation never named: its endpoint joined the
      // generation again (its old ring failed, and neither our notice of it nor the directory's
      // failed mark reached it). The instance we know is gone; the new one must hear it too.
      this.memberLost(from.nodeId, from.incarnation, `it joined generation ${this.gen} anew (mailboxes at ${r.base}, not ${from.base})`);
      this.tellFailed({ ...from, base: BigInt(r.base) }, from.nodeId, `another instance of it runs generation ${this.gen}`);
      return;
    }
    switch (r.kind) {
      case Kind.Joined:
        // Its base was checked above. Its credits mailbox counts credits from now on: those
        // this member sent before may have been crowded out there.
        if (from.rank === this.prev.rank) this.fromPrev.senderJoined();
        if (from.rank === this.next.rank) this.fromNext.senderJoined();
        return;
      case Kind.Around:
        if (r.origin >= this.size || from.rank !== this.prev.rank) {
          this.dropped++;
          return;
        }
        this.host.deliver(this.message(r.record, from.rank, r.origin, r.id, r.body));
        return;
      case Kind.Ack:
        if (from.rank === this.prev.rank) this.arounds.get(r.id)?.resolve();
        else this.dropped++;
        return;
      case Kind.Direct:
        this.host.deliver(this.message(r.record, from.rank, undefined, 0));
        return;
      case Kind.Failed:
        if (this.failure) return;
        if (r.lost === from.nodeId) this.memberLost(from.nodeId, from.incarnation, `it left the ring (${r.reason})`);
        else if (r.lost === this.host.endpoint.nodeId) this.declaredLost(from, r.reason);
        else this.memberLost(r.lost, undefined, `${r.reason} (reported by rank ${from.rank})`);
        return;
    }
  }

  private message(record: RingControl, from: number, origin: number | undefined, id: number, body?: Uint8Array): RingControlMessage {
    let passed = false;
    const pass = (options?: WaitOptions): Promise<void> => {
      if (origin === undefined) return Promise.resolve();
      if (this.failure) return Promise.reject(this.failure);
      if (passed) return Promise.resolve();
      if (options?.signal?.aborted) return Promise.reject(new RvmaError('ERR_RVMA_ABORTED', 'RingControlMessage.pass was aborted', { cause: options.signal.reason }));
      passed = true;
      // The last rank before the origin acknowledges instead of forwarding, at once: the
      // origin's around() waits for the ring (see aroundRefused for a refusal).
      try {
        const base = Number(this.base);
        const ack = this.next.rank === origin;
        this.aroundLink!.send(packRecord(ack ? Kind.Ack : Kind.Around, this.gen, this.rank, base, id, ack ? 0 : origin, ack ? undefined : body));
      } catch (error) {
        return Promise.reject(error);
      }
      return Promise.resolve();
    };
    return { record, from, origin, generation: this.gen, pass };
  }

  /** A record of this member's: the header, then body; ERR_RVMA_INVALID_ARGUMENT if it cannot be encoded (nothing is sent). */
  private encode(body: RecordBody): Uint8Array {
    try {
      return encodeRecord({ gen: this.gen, fromRank: this.rank, base: Number(this.base), ...body } as WireRecord);
    } catch (error) {
      // The record's fault (a CONTROL body msgpack cannot hold), not the peer's.
      throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `ring control record cannot be encoded: ${(error as Error).message}`);
    }
  }

  /** lazy: PutOptions.lazyAck (true or 'late'); quiet: a failure is not a loss. */
  private sendRecord(to: Member, body: RecordBody, options?: WaitOptions, how: { lazy?: boolean | 'late'; quiet?: boolean } = {}): Promise<void> {
    let bytes: Uint8Array;
    try {
      bytes = this.encode(body);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.putRecord(to, bytes, options, how);
  }

  private async putRecord(to: Member, bytes: Uint8Array, options?: WaitOptions, how: { lazy?: boolean | 'late'; quiet?: boolean } = {}): Promise<void> {
    try {
      await this.host.endpoint.put(to.nodeId, to.base, bytes, {
        timeout: options?.timeout ?? CONTROL_SEND_TIMEOUT_MS,
        signal: options?.signal,
        noBufferRetryMs: CONTROL_SEND_TIMEOUT_MS,
        lazyAck: how.lazy ?? false,
      });
    } catch (error) {
      const code = error instanceof RvmaError ? error.code : undefined;
      if (!how.quiet && code !== 'ERR_RVMA_TIMEOUT' && code !== 'ERR_RVMA_ABORTED' && code !== 'ERR_RVMA_TOO_LARGE') {
        this.memberLost(to.nodeId, to.incarnation, (error as Error).message);
        throw this.failure ?? error;
      }
      throw error;
    }
  }
}

/** A record without the header every record carries. */
type RecordBody = WireRecord extends infer R ? (R extends unknown ? Omit<R, 'gen' | 'fromRank' | 'base'> : never) : never;
