// One direction's sending side: frames go, in call order, as gathered puts into the
// neighbour's frame mailbox, each only once the neighbour's credits (read from Credits, where
// they arrive natively) say a buffer is free there.
// A frame of up to COPIED_FRAME_MAX bytes is copied as it is sent and counted, with its
// acknowledgement left late: the send is done once it is handed over, and the neighbour's
// acknowledgement, which nobody waits for (its credits pace the sender), rides with other
// traffic and never wakes this rank by itself (lazyAck: 'late'). That saves a message and a
// wake-up per frame on tcp and shm. A larger frame is sent from where
// it is, and its send is done once the neighbour has it.
import { Endpoint } from '../mailbox/endpoint';
import { RvmaError } from '../mailbox/errors';
import { PutCounter, PutFailure } from '../mailbox/put-counter';
import { Wait, WaitOptions } from '../mailbox/wait';
import { CreditDir, Credits } from './credits';
import { FRAME_HEADER_BYTES, frameHead, writeFrameHead } from './frame';
import { RingCounts } from './options';

const APPEND = { append: true } as const;
/** What a copied frame's send returns: settled already, shared by every such send. */
const SENT: Promise<void> = Promise.resolve();
/** Frames up to this size are copied when sent (a 64 KiB copy is a few µs). */
export const COPIED_FRAME_MAX = 64 << 10;

export class Outbound {
  /** The credits as last read: re-read when they seem used up. */
  private granted = 0;
  private frameBytes = 0;
  private sent = 0;
  /** Sends waiting for a credit, in call order, with their frame sizes. */
  private readonly waiters: { wait: Wait<number>; size: number }[] = [];
  private failure: Error | undefined;
  /** Counts the copied frames; a failure among them ends the generation. */
  private readonly counter: PutCounter;
  private readonly counted: { counter: PutCounter; append: true; copy: true; lazyAck: 'late' };
  /** The ring header of a copied frame, reused: the put copies it at once. */
  private head = new Uint8Array(FRAME_HEADER_BYTES + 64);

  constructor(
    private readonly endpoint: Endpoint,
    private readonly peer: string,
    private readonly vaddr: bigint,
    private readonly what: string,
    /** A put failed for a reason that ends the generation (the peer is gone). */
    private readonly lost: (error: RvmaError) => void,
    private readonly counts: RingCounts,
    private readonly credits: Credits,
    private readonly dir: CreditDir,
    /** The neighbour's ring mailboxes (Member.base): its credits name them. */
    peerBase: bigint,
  ) {
    credits.expect(dir, peer, peerBase, () => this.credit());
    this.counter = endpoint.createPutCounter();
    this.counter.on('failed', (f: PutFailure) => lost(f.error));
    this.counted = { counter: this.counter, append: true, copy: true, lazyAck: 'late' };
  }

  /** Whether a credit is free, reading the receiver's latest grant when the last one is used up. */
  private hasCredit(): boolean {
    if (this.sent < this.granted) return true;
    const granted = this.credits.granted(this.dir);
    if (granted > this.granted) {
      this.frameBytes = this.credits.frameBytes(this.dir);
      this.granted = granted;
    }
    return this.sent < this.granted;
  }

  /** Credits came (or may have): the sends waiting for them go, in order. */
  credit(): void {
    for (;;) {
      while (this.waiters.length > 0 && !this.failure && this.hasCredit()) {
        const { wait, size } = this.waiters.shift()!;
        if (size > this.frameBytes) wait.reject(this.tooLarge(size));
        else wait.resolve(this.sent++);
      }
      if (this.waiters.length === 0 || this.failure) return;
      // Asked for first, then checked again: a credit that came in between is not missed.
      this.credits.waitFor(this.dir);
      if (!this.hasCredit()) return;
    }
  }

  send(header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> {
    try {
      if (this.failure) throw this.failure;
      const size = (header?.byteLength ?? 0) + data.byteLength;
      // Checked before a sequence number is taken: a number taken is a frame the receiver waits for.
      if (this.granted > 0 && size > this.frameBytes) throw this.tooLarge(size);
      // An aborted signal would end the put before it is handed over: its number would never arrive.
      if (options.signal?.aborted) throw new RvmaError('ERR_RVMA_ABORTED', `${this.what} was aborted`, { cause: options.signal.reason });
      // The header is the caller's to reuse once the call returns (often a view of the frame it
      // just released): a send that waits takes a copy of it now.
      if (this.waiters.length > 0 || !this.hasCredit()) return this.sendOnCredit(header?.slice(), data, size, options);
      if (size > this.frameBytes) throw this.tooLarge(size);
      if (size > COPIED_FRAME_MAX) return this.put(this.sent++, header, data, options);
      this.putCopied(this.sent++, header, data);
      return SENT; // not an async function: no promise of its own per frame
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A send that waits for a credit first. */
  private async sendOnCredit(header: Uint8Array | undefined, data: Uint8Array, size: number, options: WaitOptions): Promise<void> {
    const started = Date.now();
    const seq = await this.creditFor(size, options);
    const { timeout, signal } = options;
    if (size <= COPIED_FRAME_MAX) return this.putCopied(seq, header, data);
    const left = timeout === undefined || timeout === Infinity ? timeout : Math.max(0, timeout - (Date.now() - started));
    await this.put(seq, header, data, { timeout: left, signal });
  }

  private tooLarge(size: number): RvmaError {
    return new RvmaError('ERR_RVMA_TOO_LARGE', `${this.what}: a ${size}-byte frame is larger than the neighbour's ${this.frameBytes}-byte frames`);
  }

  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.wait.reject(error);
    this.counter.close(); // freed once what is in flight settles
  }

  private creditFor(size: number, options: WaitOptions): Promise<number> {
    const wait: Wait<number> = new Wait<number>(
      `${this.what} (waiting for a free buffer at the neighbour)`,
      options,
      (w) => {
        const at = this.waiters.findIndex((x) => x.wait === w);
        if (at >= 0) this.waiters.splice(at, 1);
      },
      this.endpoint.holdLoop,
    );
    if (wait.done) return wait.promise;
    this.waiters.push({ wait, size });
    this.credit();
    return wait.promise;
  }

  /** A frame copied now and counted: nothing waits here for the neighbour's acknowledgement. */
  private putCopied(seq: number, header: Uint8Array | undefined, data: Uint8Array): void {
    const headerLen = header?.byteLength ?? 0;
    if (this.head.byteLength < FRAME_HEADER_BYTES + headerLen) this.head = new Uint8Array(FRAME_HEADER_BYTES + headerLen);
    const head = this.head.subarray(0, FRAME_HEADER_BYTES + headerLen);
    writeFrameHead(head, seq, header);
    this.endpoint.put(this.peer, this.vaddr, [head, data], this.counted);
    this.counts.framesSent++;
  }

  /**
   * A numbered frame always goes out whole, whatever the caller's timeout or signal: a number
   * taken and never sent would stall the receiver. They end the caller's wait only.
   */
  private put(seq: number, header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> {
    this.counts.framesSent++;
    const put = this.endpoint.put(this.peer, this.vaddr, [frameHead(seq, header), data], APPEND).catch((error: unknown) => {
      const cause = error as RvmaError;
      this.lost(cause); // nothing but the peer's end refuses a frame sent within its credits
      throw this.failure ?? cause;
    });
    if (options.timeout === undefined && options.signal === undefined) return put;
    const wait = new Wait<void>(this.what, options, () => undefined);
    put.then(
      () => wait.resolve(),
      (e: Error) => wait.reject(e),
    );
    return wait.promise;
  }
}
