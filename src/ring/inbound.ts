// One direction's receiving side: a mailbox of `slots` posted frame buffers (one frame each,
// ops epochs), the frames handed out in send order, and the credits that let the sender use
// a buffer again once the application released its frame.
import { RvmaError } from '../mailbox/errors';
import { Mailbox } from '../mailbox/mailbox';
import { LoopHold, Wait, WaitOptions } from '../mailbox/wait';
import { FRAME_HEADER_BYTES, readFrameHeader } from './frame';
import { RingCounts } from './options';

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

export class Inbound {
  /** Frames arrived and not taken, at seq % slots (the window holds `slots` sequence numbers). */
  private readonly arrived: (RingFrame | undefined)[];
  private readonly waiters: Wait<RingFrame>[] = [];
  private nextSeq = 0;
  private received = 0;
  private released = 0;
  private granted: number;
  private failure: Error | undefined;

  constructor(
    private readonly mailbox: Mailbox,
    private readonly slots: number,
    readonly frameBytes: number,
    private readonly what: string,
    private readonly events: InboundEvents,
  ) {
    this.arrived = new Array<RingFrame | undefined>(slots).fill(undefined);
    for (let i = 0; i < slots; i++) mailbox.post(FRAME_HEADER_BYTES + frameBytes);
    this.granted = slots;
    mailbox.listen((c) => this.arrive(c.buffer, c.bytes));
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

  /** Ends every wait with `error`; later recv() calls get it too. */
  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.reject(error);
    this.mailbox.close();
  }

  private take(): RingFrame | undefined {
    const at = this.nextSeq % this.slots;
    const frame = this.arrived[at];
    if (!frame) return undefined;
    this.arrived[at] = undefined;
    this.nextSeq++;
    return frame;
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

  private arrive(buffer: Uint8Array, bytes: number): void {
    this.received++;
    let seq: number;
    let headerLen: number;
    try {
      ({ seq, headerLen } = readFrameHeader(buffer, bytes));
      if (seq < this.nextSeq || seq >= this.nextSeq + this.slots) {
        throw new RvmaError('ERR_RVMA_PROTOCOL', `ring frame: sequence number ${seq} outside the window [${this.nextSeq}, ${this.nextSeq + this.slots})`);
      }
      if (this.arrived[seq % this.slots]) throw new RvmaError('ERR_RVMA_PROTOCOL', `ring frame: sequence number ${seq} arrived twice`);
    } catch (error) {
      this.events.broken(error as RvmaError);
      return;
    }
    this.events.counts.framesReceived++;
    const frame = new ArrivedFrame(seq, buffer, headerLen, bytes, this);
    this.arrived[seq % this.slots] = frame;
    while (this.waiters.length > 0) {
      const next = this.take();
      if (!next) break;
      this.waiters.shift()!.resolve(next);
    }
    this.maybeGrant();
  }

  /** @internal A frame was released: its buffer goes back to the mailbox. */
  repost(buffer: Uint8Array): void {
    if (this.failure || this.mailbox.closed) return;
    this.mailbox.post(buffer);
    this.released++;
    this.maybeGrant();
  }

  /**
   * Credits go back in batches of half the slots, and at once when the sender has used every
   * credit it holds (so it never waits on a batch that cannot fill).
   */
  private maybeGrant(): void {
    const allowed = this.slots + this.released;
    if (allowed === this.granted) return;
    if (allowed - this.granted >= Math.max(1, this.slots >> 1) || this.received === this.granted) {
      this.granted = allowed;
      this.events.grant(allowed);
    }
  }
}

/** A frame in its posted buffer (a class: no closure per frame). */
class ArrivedFrame implements RingFrame {
  readonly header: Uint8Array;
  readonly data: Uint8Array;
  #inbound: Inbound | undefined;
  readonly #buffer: Uint8Array;

  constructor(readonly seq: number, buffer: Uint8Array, headerLen: number, bytes: number, inbound: Inbound) {
    this.header = buffer.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + headerLen);
    this.data = buffer.subarray(FRAME_HEADER_BYTES + headerLen, bytes);
    this.#buffer = buffer;
    this.#inbound = inbound;
  }

  release(): void {
    const inbound = this.#inbound;
    if (!inbound) return;
    this.#inbound = undefined;
    inbound.repost(this.#buffer);
  }
}
