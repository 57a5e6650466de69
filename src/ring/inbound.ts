// One direction's receiving side: frames land in `slots` buffers of one slab that the native half
// (native/ring/ring_inbound.h) checks against the window and publishes there as indices, so JS
// takes each frame once, from memory, and wakes once per batch of arrivals. A released frame's
// buffer goes back to the mailbox natively, and the credits it makes go to the sender from
// there too (never as a JavaScript put).
import { native, type NativeEndpoint } from '../native';
import { type Endpoint } from '../mailbox/endpoint';
import { RvmaError } from '../base/errors';
import { type Mailbox } from '../mailbox/mailbox';
import { type LoopHold, Wait, type WaitOptions } from '../base/wait';
import { FRAME_HEADER_BYTES } from './frame';
import { type RingCounts } from './options';
import { type Member } from './membership';
import { ENTRIES_WORD, ENTRY_WORDS, CREDITS_SENT_WORD, GRANT_DUE_WORD, NOTIFY_WORD, RECEIVED_WORD, type SlabLayout, slabBytes, slabLayout } from './slab';

/** A received frame: header and data are views of the posted buffer, valid until release(). */
export interface RingFrame {
  /** Its place in this direction's order, from 0. */
  readonly seq: number;
  /** The sender's header ([header, data] sends), empty otherwise. */
  readonly header: Uint8Array;
  readonly data: Uint8Array;
  /** Gives the buffer back to the ring (re-posts it). Idempotent; do not use the views after. */
  release(): void;
}

export interface InboundEvents {
  /** The sender broke the frame format: the generation is over. */
  broken(error: RvmaError): void;
  /** Holds the event loop while a recv waits (the endpoint's holdLoop). */
  hold: LoopHold;
}

const TWO_32 = 2 ** 32;

export class Inbound {
  private readonly layout: SlabLayout;
  private readonly slab: Uint8Array;
  private readonly words: Uint32Array;
  private readonly handle: NativeEndpoint;
  private readonly waiters: Wait<RingFrame>[] = [];
  private nextSeq = 0;
  /** Frames arrived and credit records sent (mod 2^32) when last counted. */
  private counted = { received: 0, credits: 0 };
  private failure: Error | undefined;

  constructor(
    private readonly mailbox: Mailbox,
    slots: number,
    readonly frameBytes: number,
    private readonly what: string,
    private readonly events: InboundEvents,
  ) {
    this.layout = slabLayout(slots, frameBytes);
    this.slab = new Uint8Array(native().allocBuffer(slabBytes(this.layout)));
    this.words = new Uint32Array(this.slab.buffer, this.slab.byteOffset, this.layout.wordsBytes / 4);
    const l = this.layout;
    this.handle = mailbox.claim(this.slab, (handle, id) => handle.ringOpen(id, mailbox.vaddr, this.slab, l.slots, l.frameBytes, l.stride, l.wordsBytes), (why) => this.notified(why));
  }

  /**
   * The ring is complete: `sender` sends this direction's frames, and its credits go to its
   * credits mailbox (`creditsVaddr`) as records of direction `dir` (0: its sendNext, 1: its
   * sendPrev) naming this member's ring mailboxes (`base`), the first of them now.
   */
  start(endpoint: Endpoint, sender: Member, creditsVaddr: bigint, dir: 0 | 1, base: bigint): void {
    // Only the sender's puts from now on: a stranger's frame would break the window (and end
    // the generation), and its puts could hold buffers the sender's frames need.
    if (!this.mailbox.closed) this.mailbox.setAllow([sender.nodeId]);
    const target = (peer: string): void => {
      if (!this.failure) this.handle.ringTarget(this.mailbox.id, peer, BigInt(`0x${sender.incarnation}`), creditsVaddr, dir, this.frameBytes, base);
    };
    const route = endpoint.nativeRoute(sender.nodeId);
    if (!(route instanceof Promise)) target(route.peer);
    else route.then((r) => target(r.peer), (error: Error) => this.events.broken(new RvmaError('ERR_RVMA_NO_PEER', `${this.what}: the sender's node "${sender.nodeId}" could not be resolved: ${error.message}`)));
  }

  /**
   * The sender's ring is complete (its JOINED record): the credits granted so far go again, as
   * those that reached it before may not have counted.
   */
  senderJoined(): void {
    if (!this.failure && !this.mailbox.closed) this.handle.ringGrant(this.mailbox.id, true);
  }

  /** Adds the frames that arrived and the credit records sent since the last call to counts. */
  count(counts: RingCounts): void {
    const received = Atomics.load(this.words, RECEIVED_WORD);
    const credits = Atomics.load(this.words, CREDITS_SENT_WORD);
    counts.framesReceived += (received - this.counted.received + TWO_32) % TWO_32;
    counts.creditRecordsSent += (credits - this.counted.credits + TWO_32) % TWO_32;
    this.counted = { received, credits };
  }

  recv(options: WaitOptions, into?: Uint8Array): Promise<RingFrame> {
    if (this.failure) return Promise.reject(this.failure);
    const ready = this.waiters.length === 0 ? this.take() : undefined;
    if (ready) return Promise.resolve(into ? this.copyOut(ready, into) : ready);
    const wait: Wait<RingFrame> = new Wait<RingFrame>(
      this.what,
      options,
      (w) => {
        const at = this.waiters.indexOf(w);
        if (at >= 0) this.waiters.splice(at, 1);
      },
      this.events.hold,
    );
    if (wait.done) return wait.promise;
    this.waiters.push(wait);
    return into ? wait.promise.then((f) => this.copyOut(f, into)) : wait.promise;
  }

  /** The next frame if it has arrived and no recv() waits for it; throws once the direction failed. */
  tryRecv(): RingFrame | undefined {
    if (this.failure) throw this.failure;
    return this.waiters.length === 0 ? this.take() : undefined;
  }

  /** Up to `max` frames that have arrived, in order, none when a recv() waits; throws once the direction failed. */
  tryRecvMany(max: number): RingFrame[] {
    if (this.failure) throw this.failure;
    const out: RingFrame[] = [];
    if (this.waiters.length > 0) return out;
    for (let frame = this.take(); frame; frame = out.length < max ? this.take() : undefined) out.push(frame);
    return out;
  }

  /** Ends every wait with `error`; later recv() calls get it too. */
  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.reject(error);
    this.mailbox.close();
  }

  /** The next frame in order, read from the slab's words if it has arrived. */
  private take(): RingFrame | undefined {
    const { slots } = this.layout;
    const at = ENTRIES_WORD + ENTRY_WORDS * (this.nextSeq % slots);
    // The tag is written last, natively: once it names this lap, the rest of the entry is there.
    if (Atomics.load(this.words, at) !== (Math.floor(this.nextSeq / slots) + 1) % TWO_32) return undefined;
    const w = this.words;
    return new ArrivedFrame(this.nextSeq++, this.slab, this.layout.wordsBytes + this.layout.stride * w[at + 1], w[at + 3], w[at + 2], w[at + 1], this);
  }

  private copyOut(frame: RingFrame, into: Uint8Array): RingFrame {
    if (frame.data.byteLength > into.byteLength) {
      frame.release();
      throw new RvmaError('ERR_RVMA_TOO_LARGE', `${this.what}: a ${frame.data.byteLength}-byte frame does not fit into ${into.byteLength} bytes`);
    }
    into.set(frame.data);
    const copied = { seq: frame.seq, header: frame.header.slice(), data: into.subarray(0, frame.data.byteLength), release: () => undefined };
    frame.release();
    return copied;
  }

  /** Frames arrived (why undefined), or the sender broke the frame format (why says how). */
  private notified(why: string | undefined): void {
    if (why !== undefined) {
      this.events.broken(new RvmaError('ERR_RVMA_PROTOCOL', why));
      return;
    }
    // Taken back before the entries are read: what arrives from now on sends another Notify.
    Atomics.exchange(this.words, NOTIFY_WORD, 0);
    // An arrival made a credit due where none could be sent (under the mailbox table's lock).
    if (Atomics.load(this.words, GRANT_DUE_WORD) === 1 && !this.failure) this.handle.ringGrant(this.mailbox.id);
    while (this.waiters.length > 0) {
      const next = this.take();
      if (!next) break;
      this.waiters.shift()!.resolve(next);
    }
  }

  /** @internal A frame was released: its buffer goes back natively (and a credit, when one is due). */
  repost(slot: number): void {
    if (!this.failure && !this.mailbox.closed) this.handle.ringRelease(this.mailbox.id, slot);
  }
}

/** A frame in its slab buffer (a class: no closure per frame). */
class ArrivedFrame implements RingFrame {
  readonly header: Uint8Array;
  readonly data: Uint8Array;
  #inbound: Inbound | undefined;
  readonly #slot: number;

  constructor(readonly seq: number, slab: Uint8Array, at: number, headerLen: number, bytes: number, slot: number, inbound: Inbound) {
    this.header = slab.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + headerLen);
    this.data = slab.subarray(at + FRAME_HEADER_BYTES + headerLen, at + bytes);
    this.#slot = slot;
    this.#inbound = inbound;
  }

  release(): void {
    const inbound = this.#inbound;
    if (!inbound) return;
    this.#inbound = undefined;
    inbound.repost(this.#slot);
  }
}
