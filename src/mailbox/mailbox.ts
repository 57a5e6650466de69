// A receiver's mailbox: buffers go in with post(), completions come out in epoch order.
import { native, type NativeEndpoint } from '../native';
import { type Completion } from './completion';
import { type CompletionWordsSnapshot, type CompletionWordsView } from './completion-words';
import { RvmaError, hex, statusError } from '../base/errors';
import { type U64, checkBytes, checkInteger, checkOptions, checkU64, invalid, parseAllow } from '../base/validate';
import { lend } from './lent-memory';
import { type LoopHold, Wait, type WaitOptions, checkWaitOptions, parseWaitOptions } from '../base/wait';

export type EpochType = 'bytes' | 'ops';

export interface PostOptions {
  /** Count that ends this buffer's epoch; overrides the mailbox's threshold. */
  threshold?: U64;
}

/** What a Mailbox needs from its Endpoint (internal). */
export interface MailboxHost {
  readonly handle: NativeEndpoint;
  readonly nodeId: string;
  /** +1 when something starts waiting, -1 when it stops (keeps the process alive meanwhile). */
  readonly waiting: LoopHold;
  /** The mailbox's native half is gone; stop routing events to it. */
  released(id: number): void;
  /** The name of the memory under a buffer (see MemoryIds), 0 if unnamed. */
  memoryOf(buffer: Uint8Array): number;
}

interface Posted {
  index: number;
  buffer: Uint8Array;
}

const MAX_BUFFER_BYTES = 2 ** 40;

export class Mailbox {
  // Created on first use: a million idle mailboxes should cost little JS heap.
  private posted: Posted[] | undefined;
  private ready: Completion[] | undefined;
  private waiters: Wait<Completion>[] | undefined;
  private closedEpoch = -1;
  private closedSnapshot: CompletionWordsSnapshot | undefined; // the slot is reused after close
  private nextLabel: string | undefined; // names next() waits in their errors
  private listener: ((c: Completion) => void) | undefined;
  /** Completions taken natively (claim): the memory they land in, kept until the native mailbox is gone. */
  private claimed: { memory: Uint8Array; onNotify: (why: string | undefined) => void } | undefined;

  /** @internal Created by Endpoint.openMailbox. */
  constructor(
    private readonly host: MailboxHost,
    readonly vaddr: bigint,
    /** @internal */ readonly id: number,
    readonly epochType: EpochType,
    private readonly threshold: bigint,
    private readonly words: CompletionWordsView,
  ) {}

  get closed(): boolean {
    return this.closedEpoch >= 0;
  }

  /** Completed epochs (mod 2^32), read straight from the completion words: no native call. */
  get epoch(): number {
    return this.closed ? this.closedEpoch : this.words.epoch();
  }

  /** The last completion record as the completion words hold it. */
  lastCompletion(): CompletionWordsSnapshot {
    return this.closedSnapshot ?? this.words.snapshot();
  }

  /** Buffers posted and not yet retired. */
  get postedCount(): number {
    return this.posted?.length ?? 0;
  }

  /**
   * Appends a buffer to the mailbox's FIFO. A number allocates native, zeroed, page-aligned
   * memory of that size; a Buffer/TypedArray/ArrayBuffer is used in place (not copied) and
   * must not be touched until its completion arrives. Returns the buffer that was posted.
   */
  post(sizeOrBuffer: number | ArrayBufferView | ArrayBuffer, options?: PostOptions): Uint8Array {
    const call = 'Mailbox.post';
    const given = options === undefined ? undefined : checkOptions<PostOptions>(call, options, ['threshold']).threshold;
    this.assertOpen(call);
    const buffer =
      typeof sizeOrBuffer === 'number'
        ? new Uint8Array(native().allocBuffer(checkInteger(call, 'size', sizeOrBuffer, 0, MAX_BUFFER_BYTES)))
        : lend(call, 'buffer', checkBytes(call, 'buffer', sizeOrBuffer));
    const threshold = given === undefined ? this.threshold : checkU64(call, 'threshold', given, 1n);
    if (this.epochType === 'bytes') {
      if (buffer.byteLength === 0) throw invalid(call, 'a bytes-epoch buffer must hold at least 1 byte');
      // 0: the whole buffer, which always fits
      if (threshold !== 0n && threshold > BigInt(buffer.byteLength)) {
        throw invalid(call, `threshold ${threshold} is larger than the buffer (${buffer.byteLength} bytes)`);
      }
    }
    const index = this.host.handle.post(this.vaddr, buffer, threshold, this.host.memoryOf(buffer));
    if (index < 0) throw statusError(-index, { op: call, vaddr: this.vaddr });
    (this.posted ??= []).push({ index, buffer });
    return buffer;
  }

  /** Ends the current epoch now, with whatever the head buffer holds. */
  incEpoch(): void {
    const call = 'Mailbox.incEpoch';
    this.assertOpen(call);
    const status = this.host.handle.incEpoch(this.vaddr);
    if (status !== 0) throw statusError(status, { op: call, vaddr: this.vaddr });
  }

  /**
   * From now on the mailbox accepts puts only from these node ids (as the `allow` option at
   * open), or from every node when `allow` is undefined. Puts already admitted finish; later
   * ones from other nodes are refused with ERR_RVMA_FORBIDDEN before a byte is placed.
   */
  setAllow(allow: readonly string[] | undefined): void {
    const call = 'Mailbox.setAllow';
    const ids = parseAllow(call, allow);
    this.assertOpen(call);
    const status = this.host.handle.setMailboxAccess(this.vaddr, ids);
    if (status !== 0) throw statusError(status, { op: call, vaddr: this.vaddr });
  }

  /** The next completion, in epoch order. Rejects with ERR_RVMA_CLOSED when the mailbox closes. */
  next(options?: WaitOptions): Promise<Completion> {
    const call = 'Mailbox.next';
    let o: WaitOptions;
    try {
      o = parseWaitOptions(call, options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.ready?.length) return Promise.resolve(this.ready.shift()!);
    if (this.closed) return Promise.reject(this.closedError(call));
    const waiters = (this.waiters ??= []);
    const wait = new Wait<Completion>(
      (this.nextLabel ??= `${call} on mailbox ${hex(this.vaddr)}`),
      o,
      (w) => {
        const i = waiters.indexOf(w);
        if (i >= 0) waiters.splice(i, 1);
      },
      this.host.waiting,
    );
    if (!wait.done) waiters.push(wait);
    return wait.promise;
  }

  /** Completions as an async iterator; it ends when the mailbox closes. */
  completions(options?: { signal?: AbortSignal }): AsyncIterableIterator<Completion> {
    const o = checkOptions<{ signal?: AbortSignal }>('Mailbox.completions', options, ['signal']);
    checkWaitOptions('Mailbox.completions', undefined, o.signal);
    return this.iterate(o.signal);
  }

  private async *iterate(signal: AbortSignal | undefined): AsyncIterableIterator<Completion> {
    for (;;) {
      try {
        yield await this.next({ signal });
      } catch (error) {
        if (error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED') return;
        throw error;
      }
    }
  }

  /** Closes the mailbox: later puts to it are refused, pending waits reject with ERR_RVMA_CLOSED. */
  close(): void {
    if (this.closed) return;
    this.freeze();
    const result = this.host.handle.closeMailbox(this.vaddr);
    if (this.claimed) this.host.handle.ringClose(this.id);
    // 1: gone now. 0: puts still being written; buffers stay referenced until the release event.
    if (result !== 0) this.released();
    this.dropWaits();
  }

  /**
   * @internal Hands every later completion to fn as it arrives, instead of to next(): for the
   * library's own protocols, which take each one at once (no promise per completion).
   */
  listen(fn: (c: Completion) => void): void {
    this.listener = fn;
  }

  /**
   * @internal Native code takes this mailbox's completions from now on (src/ring/): `open` hands
   * them over, with `memory` that native code works in and that stays referenced until the native
   * mailbox is gone. `onNotify` hears the mailbox's Notify events. Returns the native endpoint,
   * for the calls that follow.
   */
  claim(memory: Uint8Array, open: (handle: NativeEndpoint, id: number) => number, onNotify: (why: string | undefined) => void): NativeEndpoint {
    this.assertOpen('Ring.join');
    const status = open(this.host.handle, this.id);
    if (status !== 0) throw statusError(status, { op: 'Ring.join', vaddr: this.vaddr });
    this.claimed = { memory, onNotify };
    return this.host.handle;
  }

  /** @internal A Notify event for this mailbox (claim). */
  notified(why: string | undefined): void {
    if (!this.closed) this.claimed?.onNotify(why);
  }

  /** @internal An epoch ended natively. */
  complete(epoch: number, bufferIndex: number, bytes: number, ops: number, sender?: string): void {
    if (this.closed) return;
    const head = this.posted?.shift();
    if (!head || head.index !== bufferIndex) {
      throw new Error(`rvma internal: completion for buffer ${bufferIndex} but FIFO head is ${head?.index}`);
    }
    const completion: Completion = { vaddr: this.vaddr, epoch, bufferIndex, bytes, ops, buffer: head.buffer };
    if (sender !== undefined) completion.sender = sender;
    if (this.listener) return this.listener(completion);
    const wait = this.waiters?.[0];
    if (wait) wait.resolve(completion);
    else (this.ready ??= []).push(completion);
  }

  /** @internal The native mailbox is gone: no more writes into our buffers. */
  released(): void {
    this.posted = undefined;
    this.claimed = undefined;
    this.host.released(this.id);
  }

  /** @internal The endpoint closed under us. */
  endpointClosed(): void {
    if (this.closed) return;
    this.freeze();
    this.posted = undefined;
    this.claimed = undefined;
    this.dropWaits();
  }

  private freeze(): void {
    this.closedSnapshot = this.words.snapshot();
    this.closedEpoch = this.closedSnapshot.epoch;
  }

  private dropWaits(): void {
    this.ready = undefined;
    if (!this.waiters?.length) return;
    const error = this.closedError('Mailbox.next');
    for (const wait of [...this.waiters]) wait.reject(error);
  }

  private assertOpen(call: string): void {
    if (this.closed) throw this.closedError(call);
  }

  private closedError(call: string): RvmaError {
    return new RvmaError('ERR_RVMA_CLOSED', `${call}: mailbox ${hex(this.vaddr)} is closed`);
  }
}
