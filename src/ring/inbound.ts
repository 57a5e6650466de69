// One direction's receiving side: frames land in `slots` buffers of one slab that the native half
// (native/ring/ring_inbound.h) checks against the window and publishes there as indices, so JS
// takes each frame once, from memory, and wakes once per batch of arrivals; a released frame's
// buffer goes back to the mailbox natively, which also counts the credits the sender may use.
import { native } from '../native';
import { RvmaError } from '../mailbox/errors';
import { Mailbox } from '../mailbox/mailbox';
import { LoopHold, Wait, WaitOptions } from '../mailbox/wait';
import { FRAME_HEADER_BYTES } from './frame';
import { RingCounts } from './options';
import { ENTRIES_WORD, ENTRY_WORDS, GRANTED_WORD, NOTIFY_WORD, RECEIVED_WORD, SlabLayout, slabBytes, slabLayout } from './slab';

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
  /** Tell the sender it may send `total` frames in all. */
  grant(total: number): void;
  /** The sender broke the frame format: the generation is over. */
  broken(error: RvmaError): void;
  /** Holds the event loop while a recv waits (the endpoint's holdLoop). */
  hold: LoopHold;
  /** Counts the frames that arrive. */
  counts: RingCounts;
}

const TWO_32 = 2 ** 32;

export class Inbound {
  private readonly layout: SlabLayout;
  private readonly slab: Uint8Array;
  private readonly words: Uint32Array;
  private readonly waiters: Wait<RingFrame>[] = [];
  private nextSeq = 0;
  /** Frames arrived (mod 2^32) when last counted. */
  private counted = 0;
  /** The credits last sent to the sender, in all. */
  private granted: number;
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
    mailbox.receiveRing(this.slab, this.layout, (why) => this.notified(why));
    this.granted = slots;
  }

  /** The first grant, once the sender is known to exist. */
  start(): void {
    this.events.grant(this.granted);
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
    const received = this.words[RECEIVED_WORD];
    this.events.counts.framesReceived += (received - this.counted + TWO_32) % TWO_32;
    this.counted = received;
    while (this.waiters.length > 0) {
      const next = this.take();
      if (!next) break;
      this.waiters.shift()!.resolve(next);
    }
    this.sendGrant(this.grantedNow());
  }

  /** The credits the native half counts, read whole (a progress thread may be writing them). */
  private grantedNow(): number {
    for (;;) {
      const high = Atomics.load(this.words, GRANTED_WORD + 1);
      const low = Atomics.load(this.words, GRANTED_WORD);
      if (Atomics.load(this.words, GRANTED_WORD + 1) === high) return high * TWO_32 + low;
    }
  }

  private sendGrant(total: number): void {
    if (total <= this.granted || this.failure) return;
    this.granted = total;
    this.events.grant(total);
  }

  /** @internal A frame was released: its buffer goes back natively. */
  repost(slot: number): void {
    if (this.failure) return;
    const granted = this.mailbox.releaseRingSlot(slot);
    if (granted >= 0) this.sendGrant(granted);
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
