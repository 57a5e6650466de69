// The sending half of an endpoint: promise puts and raw writes kept until their outcome, counted
// ones handed over and forgotten, small ones queued for the turn's end, and NO_BUFFER retries.
import { PUT_ROUND_DUE, type NativeEndpoint } from '../native';
import { RvmaError, type StatusContext, codeOfStatus, statusError } from '../base/errors';
import { debugLog } from '../base/debug-log';
import { type LoopHold, Wait, type WaitOptions } from '../base/wait';
import { AckPace, type CountedPut } from './call-options';
import { IdTable } from './id-table';
import type { MemoryIds } from './memory-ids';
import { NativeRoutes } from './native-routes';
import { type PutData, checkPutData } from './put-data';
import { PUT_COPY, type PutDescriptor, putFlags } from './put-descriptor';
import { PutQueue, queueable } from './put-queue';
import { PutCounter, counterOfPutId } from './put-counter';
import type { Route } from './resolver';

/** Where a put goes: the peer's route and the mailbox vaddr (or region key). */
export interface Destination {
  route: Route;
  vaddr: bigint;
}

/** What the sender needs of its endpoint. */
export interface PutSenderHost {
  readonly nodeId: string;
  isClosed(): boolean;
  readonly holdLoop: LoopHold;
  /** Throws ERR_RVMA_CLOSED once the endpoint closed. */
  assertOpen(call: string): void;
  /** The node behind a target is gone or moved: resolve it afresh next time. */
  forget(target: string): void;
}

interface PendingPut extends Omit<PutDescriptor, 'data'> {
  wait: Wait<void>;
  /** Kept until the native side reports, so the bytes stay alive while they are read (head too). */
  data: Uint8Array | undefined;
  /** What the caller named (node id, label, address or name): forgotten on PEER_LOST. */
  target: string;
  /** Where it went, once resolved; handed to the native side from then on (it may read data until settled). */
  destination: Destination | undefined;
  /** With noBufferRetryMs: until when a NO_BUFFER refusal is retried, and how often it was. */
  retryUntil: number;
  retries: number;
  call: string;
}

export class PutSender {
  private readonly pending = new IdTable<PendingPut>();
  private nextId = 1;
  /** Small counted puts of this turn, handed over in one native call (see PutQueue). */
  private readonly queue: PutQueue;
  /** Puts handed to the native side in this turn leave in one write, at its end (loop progress). */
  private flushQueued = false;
  private readonly routes: NativeRoutes;

  constructor(
    private readonly host: PutSenderHost,
    private readonly handle: NativeEndpoint,
    /** Names the memory of puts for the verbs registration cache; undefined without verbs. */
    private readonly memory: MemoryIds | undefined,
  ) {
    this.routes = new NativeRoutes(handle);
    this.queue = new PutQueue(handle, this.routes);
  }

  /** A put or raw write whose promise settles with its outcome. */
  send(
    call: string,
    target: string,
    destination: Destination | Promise<Destination>,
    data: PutData,
    offset: bigint,
    append: boolean,
    raw: boolean,
    o: WaitOptions & { noBufferRetryMs?: number; ack?: AckPace },
  ): Promise<void> {
    const [head, bytes] = checkPutData(call, data);
    this.host.assertOpen(call);
    const id = this.nextId++;
    const pending: PendingPut = {
      id,
      data: bytes,
      head,
      offset,
      flags: putFlags(append, raw, o.ack ?? AckPace.Eager, false),
      target,
      destination: undefined,
      retryUntil: o.noBufferRetryMs ? Date.now() + o.noBufferRetryMs : 0,
      retries: 0,
      call,
      wait: new Wait<void>(
        this.putLabel(call, target),
        o,
        () => {
          // Settled early (timeout/abort): the native side may still read the bytes.
          if (pending.data === undefined || !pending.destination) this.pending.delete(id);
        },
        this.host.holdLoop,
      ),
    };
    if (pending.wait.done) return pending.wait.promise;
    this.pending.add(pending);
    if (destination instanceof Promise) {
      destination.then(
        (d) => this.submit(pending, d),
        (error: Error) => {
          this.pending.delete(id);
          pending.wait.reject(error);
        },
      );
    } else {
      this.submit(pending, destination);
    }
    return pending.wait.promise;
  }

  /** A counted put or raw write: no promise, no per-put state here; the counter settles it. */
  sendCounted(
    call: string,
    target: string,
    vaddr: bigint,
    destination: Destination | Promise<Destination>,
    data: PutData,
    raw: boolean,
    o: CountedPut,
  ): void {
    const { counter } = o;
    const [head, bytes] = checkPutData(call, data);
    const len = bytes.byteLength + (head === undefined ? 0 : head.byteLength);
    const copy = o.copy || len <= PutCounter.COPY_MAX_BYTES;
    const id = counter.issue(target, vaddr, bytes, head, copy);
    const put: PutDescriptor = { id, data: bytes, head, offset: o.offset, flags: putFlags(o.append, raw, o.ack, copy) };
    if (!(destination instanceof Promise)) return this.submitCounted(put, destination, len, counter);
    const index = counter.issued - 1;
    // Copied puts are copied now, not once the route is known: the caller may reuse the memory.
    if (copy) {
      put.data = joinedCopy(head, bytes);
      put.head = undefined;
    }
    destination.then(
      (d) => this.submitCounted(put, d, len, counter),
      (error: unknown) => {
        if (!this.host.isClosed()) counter.failedLocally(index, error instanceof RvmaError ? error : new RvmaError('ERR_RVMA_NO_PEER', `${call}: ${String(error)}`));
      },
    );
  }

  /** A ring frame handed to its native sending side, behind the puts queued in this turn. */
  ringSend(outId: number, putId: number, data: Uint8Array, header: Uint8Array | undefined): number {
    this.queue.flush();
    const status = this.handle.ringSend(outId, putId, data, header);
    if (status !== PUT_ROUND_DUE) return status;
    this.flushSoon();
    return 0;
  }

  /** The outcome of a promise put. reason: why it failed, where the transport says. */
  settled(id: number, status: number, reason?: string): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    if (this.retryLater(pending, status)) return;
    this.pending.delete(id);
    const bytes = pending.data && pending.data.byteLength + (pending.head?.byteLength ?? 0);
    pending.data = pending.head = undefined;
    if (status === 0) {
      pending.wait.resolve();
      return;
    }
    const code = codeOfStatus(status);
    if (code === 'ERR_RVMA_PEER_LOST' || code === 'ERR_RVMA_NO_PEER') this.host.forget(pending.target);
    const context: StatusContext = { op: pending.call, vaddr: pending.destination?.vaddr ?? 0n, node: pending.target, bytes, reason };
    const error = statusError(status, context);
    if (debugLog.enabled) debugLog(`endpoint "${this.host.nodeId}": ${error.code}: ${error.message}`);
    pending.wait.reject(error);
  }

  /** The endpoint closed (after the native side let go of every put's bytes): what waits rejects with error. */
  endpointClosed(error: RvmaError): void {
    this.queue.clear();
    for (const pending of this.pending.values()) {
      pending.data = pending.head = undefined;
      pending.wait.reject(error);
    }
    this.pending.clear();
  }

  /** Hands a put to the native side (again, when a NO_BUFFER refusal is retried). */
  private submit(pending: PendingPut, d: Destination): void {
    if (pending.wait.done || this.host.isClosed()) {
      this.pending.delete(pending.id); // settled while resolving or between retries: nothing in flight
      return;
    }
    pending.destination = d;
    // Not through the queue: a promise put reaches its provider now (with loopback, it is
    // placed before put() returns). Its data is there until it settles.
    const status = this.handOver(pending as PutDescriptor, d, false, 0);
    if (status !== 0) this.settled(pending.id, status);
  }

  private submitCounted(put: PutDescriptor, d: Destination, len: number, counter: PutCounter): void {
    if (this.host.isClosed()) return; // counted as lost when the endpoint closed
    const status = this.handOver(put, d, true, len);
    if (status !== 0) counter.refused(counterOfPutId(put.id)!.index, status);
  }

  /**
   * One put to the native side: with mayQueue a small one into this turn's queue (copied
   * there), any other at once, behind what the queue holds. 0, or the status it was refused
   * with now. len: the payload's bytes (head's and data's), needed only with mayQueue.
   */
  private handOver(put: PutDescriptor, d: Destination, mayQueue: boolean, len: number): number {
    if (mayQueue && queueable(len, put.offset)) {
      this.queue.add(put, d.route, d.vaddr, len);
      this.flushSoon();
      return 0;
    }
    const memory = put.flags & PUT_COPY ? 0 : (this.memory?.of(put.data) ?? 0);
    this.queue.flush(); // puts leave in the order they were made
    const status = this.handle.put(put.id, this.routes.indexOf(d.route), d.vaddr, put.data, put.offset, put.flags, memory, put.head);
    if (status !== PUT_ROUND_DUE) return status;
    this.flushSoon();
    return 0;
  }

  /** A NO_BUFFER refusal within the put's retry budget: try again after a backoff. */
  private retryLater(pending: PendingPut, status: number): boolean {
    if (!pending.retryUntil || pending.wait.done || codeOfStatus(status) !== 'ERR_RVMA_NO_BUFFER') return false;
    if (Date.now() >= pending.retryUntil) return false;
    const attempt = ++pending.retries;
    const resubmit = (): void => this.submit(pending, pending.destination!);
    if (attempt <= 3) setImmediate(resubmit); // the receiver usually re-posts within a turn
    else setTimeout(resubmit, Math.min(2 ** (attempt - 4), 10));
    return true;
  }

  /**
   * At the end of this turn the queued puts go over, and (loop progress) everything queued
   * natively leaves. An immediate, not a microtask: it runs once every promise chain of the turn
   * has settled, so puts made after an await leave in the same write. A rendezvous ping-pong
   * step (its answer, then the next request) took 113 against 200 µs of CPU per side, and a ring
   * frame about 40% less (bench:rendezvous ping, bench:ring, same CPU); put round trips and
   * bandwidth did not change (bench:tcp).
   */
  private flushSoon(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(this.flushPuts);
  }

  private readonly flushPuts = (): void => {
    this.flushQueued = false;
    if (this.host.isClosed()) return;
    if (this.queue.size) this.queue.flush(); // sends everything queued natively too
    else this.handle.flush();
  };

  /** What a put's timeout or abort error names it: built once per target, not per put. */
  private putLabel(call: string, target: string): string {
    if (call !== this.lastLabelCall || target !== this.lastLabelTarget) {
      this.lastLabelCall = call;
      this.lastLabelTarget = target;
      this.lastLabel = `${call} to "${target}"`;
    }
    return this.lastLabel;
  }
  private lastLabelCall = '';
  private lastLabelTarget = '';
  private lastLabel = '';
}

/** A put's bytes, head and data, copied into one new array (not slice(): a Buffer's is a view). */
function joinedCopy(head: Uint8Array | undefined, data: Uint8Array): Uint8Array {
  if (!head) return new Uint8Array(data);
  const joined = new Uint8Array(head.byteLength + data.byteLength);
  joined.set(head);
  joined.set(data, head.byteLength);
  return joined;
}
