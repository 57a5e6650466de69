// One direction's sending side: native code numbers the frames and sends each within the
// neighbour's credits (native/ring/ring_outbound.h), one call per frame. Only a send that finds
// no credit waits here, behind those already waiting, and goes when the next credit comes.
// A frame of up to COPIED_FRAME_MAX bytes is copied as it is sent and counted, with its
// acknowledgement left late: the send is done once it is handed over, and the neighbour's
// acknowledgement, which nobody waits for (its credits pace the sender), rides with other
// traffic and never wakes this rank by itself (lazyAck: 'late'). That saves a message and a
// wake-up per frame on tcp and shm. A larger frame is sent from where it is (its number taken
// natively), and its send is done once the neighbour has it.
import { type Endpoint } from '../mailbox/endpoint';
import { RvmaError, codeOfStatus, statusError } from '../base/errors';
import { type PutCounter, type PutFailure } from '../mailbox/put-counter';
import { type Route } from '../mailbox/resolver';
import { Wait, type WaitOptions } from '../base/wait';
import { type NativeEndpoint, RING_NO_CREDIT } from '../native';
import { type CreditDir, type Credits } from './credits';
import { FRAME_HEADER_BYTES } from './frame';
import { type Member } from './membership';
import { type RingCounts } from './options';

const APPEND = { append: true } as const;
/** What a copied frame's send returns: settled already, shared by every such send. */
const SENT: Promise<void> = Promise.resolve();
/** Frames up to this size are copied when sent (a 64 KiB copy is a few µs). */
export const COPIED_FRAME_MAX = 64 << 10;

/** A send waiting for a credit, with a copy of its header. */
interface Waiting {
  wait: Wait<void>;
  header: Uint8Array | undefined;
  data: Uint8Array;
}

export class Outbound {
  /** The native sending side, once the neighbour's node is resolved (sends wait until then). */
  private out: number | undefined;
  private readonly handle: NativeEndpoint;
  /** Sends waiting for a credit, in call order. */
  private readonly waiters: Waiting[] = [];
  private failure: Error | undefined;
  /** Counts the copied frames; a failure among them ends the generation. */
  private readonly counter: PutCounter;
  /** The neighbour's node id. */
  private readonly peer: string;

  constructor(
    private readonly endpoint: Endpoint,
    to: Member,
    /** The neighbour's frame mailbox for this direction. */
    private readonly vaddr: bigint,
    private readonly what: string,
    /** A put failed for a reason that ends the generation (the peer is gone). */
    private readonly lost: (error: RvmaError) => void,
    private readonly counts: RingCounts,
    private readonly credits: Credits,
    private readonly dir: CreditDir,
  ) {
    this.handle = credits.native;
    this.peer = to.nodeId;
    credits.expect(dir, to.nodeId, to.base, () => this.credit());
    this.counter = endpoint.createPutCounter();
    this.counter.on('failed', (f: PutFailure) => lost(f.error));
    const open = (route: Route): void => {
      if (this.failure) return;
      const out = credits.openSender(dir, route.peer, route.incarnation ?? 0n, vaddr);
      if (out < 0) return lost(statusError(-out, { op: what, vaddr, node: to.nodeId }));
      this.out = out;
      this.credit();
    };
    const route = endpoint.nativeRoute(to.nodeId);
    if (!(route instanceof Promise)) open(route);
    else route.then(open, (error: Error) => lost(new RvmaError('ERR_RVMA_NO_PEER', `${what}: the neighbour's node "${to.nodeId}" could not be resolved: ${error.message}`)));
  }

  /** Credits came (or may have): the sends waiting for them go, in order. */
  credit(): void {
    if (this.sendWaiting()) return;
    // Asked for first, then tried again: a credit that came in between is not missed (and one
    // that comes after sends a Notify).
    this.credits.waitFor(this.dir);
    this.sendWaiting();
  }

  send(header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> {
    try {
      if (this.failure) throw this.failure;
      // An aborted signal would end the put before it is handed over: its number would never arrive.
      if (options.signal?.aborted) throw new RvmaError('ERR_RVMA_ABORTED', `${this.what} was aborted`, { cause: options.signal.reason });
      if (this.waiters.length === 0 && this.out !== undefined) {
        const sent = this.trySend(header, data, options);
        if (sent) return sent;
      }
      // Refused at once, not after the wait, once the neighbour's frame size is known.
      const frameBytes = this.credits.frameBytes(this.dir);
      const size = (header?.byteLength ?? 0) + data.byteLength;
      if (frameBytes > 0 && size > frameBytes) throw this.tooLarge(size);
      // The header is the caller's to reuse once the call returns (often a view of the frame it
      // just released): a send that waits takes a copy of it now.
      return this.waitForCredit(header?.slice(), data, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.wait.reject(error);
    this.counter.close(); // freed once what is in flight settles
    if (this.out !== undefined) this.handle.ringOutClose(this.out);
  }

  /**
   * Sends what waits while credits last; true once nothing waits that a credit could send
   * (none waits, the direction failed, or the neighbour is not resolved yet).
   */
  private sendWaiting(): boolean {
    while (this.waiters.length > 0 && !this.failure && this.out !== undefined) {
      const w = this.waiters[0];
      let sent: Promise<void> | undefined;
      try {
        sent = this.trySend(w.header, w.data, {});
      } catch (error) {
        this.waiters.shift();
        w.wait.reject(error as Error);
        continue;
      }
      if (!sent) return false;
      this.waiters.shift();
      if (sent === SENT) w.wait.resolve();
      else sent.then(() => w.wait.resolve(), (error: Error) => w.wait.reject(error));
    }
    return true;
  }

  /** The frame goes now if a credit is free: what its send returns, or undefined (nothing sent). */
  private trySend(header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> | undefined {
    const headerLen = header?.byteLength ?? 0;
    const size = headerLen + data.byteLength;
    if (size > COPIED_FRAME_MAX) return this.sendInPlace(header, data, size, options);
    const status = this.endpoint.ringSend(this.out!, this.counter.nextPutId, data, header);
    if (status === RING_NO_CREDIT) return undefined;
    if (status !== 0) throw this.refusal(status, size);
    this.counter.issue(this.peer, this.vaddr, data, undefined, true);
    this.counts.framesSent++;
    return SENT;
  }

  /**
   * A frame too large to copy, with a number taken natively: it always goes out whole, whatever
   * the caller's timeout or signal (a number taken and never sent would stall the receiver).
   * They end the caller's wait only.
   */
  private sendInPlace(header: Uint8Array | undefined, data: Uint8Array, size: number, options: WaitOptions): Promise<void> | undefined {
    const headerLen = header?.byteLength ?? 0;
    const head = new Uint8Array(FRAME_HEADER_BYTES + headerLen);
    const status = this.handle.ringTake(this.out!, size, headerLen, head);
    if (status === RING_NO_CREDIT) return undefined;
    if (status !== 0) throw this.refusal(status, size);
    if (header) head.set(header, FRAME_HEADER_BYTES);
    this.counts.framesSent++;
    const put = this.endpoint.put(this.peer, this.vaddr, [head, data], APPEND).catch((error: unknown) => {
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

  private waitForCredit(header: Uint8Array | undefined, data: Uint8Array, options: WaitOptions): Promise<void> {
    const wait: Wait<void> = new Wait<void>(
      `${this.what} (waiting for a free buffer at the neighbour)`,
      options,
      (w) => {
        const at = this.waiters.findIndex((x) => x.wait === w);
        if (at >= 0) this.waiters.splice(at, 1);
      },
      this.endpoint.holdLoop,
    );
    if (wait.done) return wait.promise;
    this.waiters.push({ wait, header, data });
    this.credit();
    return wait.promise;
  }

  private refusal(status: number, size: number): RvmaError {
    return codeOfStatus(status) === 'ERR_RVMA_TOO_LARGE' ? this.tooLarge(size) : statusError(status, { op: this.what, vaddr: this.vaddr });
  }

  private tooLarge(size: number): RvmaError {
    return new RvmaError('ERR_RVMA_TOO_LARGE', `${this.what}: a ${size}-byte frame is larger than the neighbour's ${this.credits.frameBytes(this.dir)}-byte frames`);
  }
}
