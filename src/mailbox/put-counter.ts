// A sender-side completion counter, RVMA's local completion pointer: puts that name it return
// at once, and the receiver's answers bump words in native memory that reads here see with no
// native call. Only failures, and a level a waiter asked for, come up as events. Failures count
// here once their event is in, so a reach() that covers a failure resolves after its report.
import { EventEmitter } from 'node:events';
import { RvmaError, type RvmaErrorCode, type StatusContext, statusError } from '../base/errors';
import { checkInteger } from '../base/validate';
import { type LoopHold, Wait, type WaitOptions, parseWaitOptions } from '../base/wait';

// Slot layout in 32-bit words (native/core/put_counters.h), in pages of completion words.
export { SLOT_WORDS as COUNTER_SLOT_WORDS, SLOTS_PER_PAGE as COUNTER_SLOTS_PER_PAGE } from './completion-words';
const COMPLETED = 0;
const SETTLED_BELOW = 4;
const SEQ = 7;
/** Held memory is looked over once this many references wait. */
const HELD_CHECK = 64;
const TWO_32 = 2 ** 32;
// A put id that names a counter (CounterPutId): flag + slot * 2^32 + its index mod 2^32.
const COUNTER_FLAG = 2 ** 52;

/** Whether a native put id names a counter; then its slot and index (mod 2^32). */
export function counterOfPutId(id: number): { slot: number; index: number } | undefined {
  if (id < COUNTER_FLAG) return undefined;
  const rest = id - COUNTER_FLAG;
  return { slot: Math.floor(rest / TWO_32), index: rest % TWO_32 };
}

/** What a counted put that failed reports ('failed' event). */
export interface PutFailure {
  code: RvmaErrorCode;
  error: RvmaError;
  /** The put's position among this counter's puts, from 0 (-1: a count of puts, see `count`). */
  index: number;
  /** How many puts this report covers: 1, or those in flight when the endpoint closed. */
  count: number;
}

/** A level of settled puts, as reach() resolves with it. */
export interface PutCounterState {
  completed: number;
  failed: number;
}

/** What a counter needs of its endpoint. @internal */
export interface PutCounterHost {
  readonly nodeId: string;
  /**
   * Loop progress: the native side writes the counter words only on this thread, inside
   * calls from it, so a plain read sees them whole (no seqlock, no atomic loads).
   */
  readonly writesOnThisThread: boolean;
  armPutCounter(slot: number, level: number): boolean;
  releasePutCounter(slot: number): void;
  /** A put that never reached the native side is settled (its index, mod 2^32). */
  skipCountedPut(slot: number, index: number): void;
  /** Keeps the endpoint's wake-up referenced while a reach() waits. */
  readonly waiting: LoopHold;
}

interface Reach {
  level: number;
  wait: Wait<PutCounterState>;
}

/** The events a PutCounter emits, with their listeners' arguments. */
export interface PutCounterEvents {
  failed: [failure: PutFailure];
}

// Names checked against the map's keys, so a misspelt one is reported by name (see Endpoint).
export interface PutCounter {
  on<K extends keyof PutCounterEvents>(event: K, listener: (...args: PutCounterEvents[K]) => void): this;
  once<K extends keyof PutCounterEvents>(event: K, listener: (...args: PutCounterEvents[K]) => void): this;
  off<K extends keyof PutCounterEvents>(event: K, listener: (...args: PutCounterEvents[K]) => void): this;
}

export class PutCounter extends EventEmitter<PutCounterEvents> {
  /**
   * Counted puts of up to this many bytes are copied when they are issued: their memory may
   * change at once. Larger ones are read where they are, until the counter covers them.
   */
  static readonly COPY_MAX_BYTES = 4096;

  private issuedCount = 0;
  /** Failures reported: by native events, by a route that failed, or lost with the endpoint. */
  private failedCount = 0;
  /** Failures that never reached the native side (the native level of a wait leaves them out). */
  private localFailed = 0;
  /** The native side says the level is reached, but failures in it are still on their way up. */
  private awaitingFailures = false;
  private reaches: Reach[] = [];
  private armedAt = 0;
  /**
   * Memory of large puts in flight, by put index (heldIndex[i] is the index of held[i]), kept
   * alive until every put up to it has settled.
   */
  private held: Uint8Array[] = [];
  private heldIndex: number[] = [];
  private closed = false;
  private endpointGone = false;
  private releasePending = false;
  /** Where its puts went, while they all went to one place (for failure messages). */
  private destination: { target: string; vaddr: bigint } | undefined;
  private mixed = false;
  private last: RvmaError | undefined;

  /** @internal */
  constructor(
    private readonly host: PutCounterHost,
    /** @internal */ readonly slot: number,
    private readonly words: Uint32Array,
    private readonly base: number,
  ) {
    super();
  }

  /** References to memory of puts in flight it holds (for tests). @internal */
  get heldCount(): number {
    return this.held.length;
  }

  /** Puts issued with this counter. */
  get issued(): number {
    return this.issuedCount;
  }

  /** Puts the receiver placed. */
  get completed(): number {
    return this.word(COMPLETED);
  }

  /** A u64 of the native words. */
  private word(at: number): number {
    const w = this.words;
    const b = this.base + at;
    // A counted loop reads this once per put: four atomic loads were about 6% of its time.
    if (this.host.writesOnThisThread) return w[b] + w[b + 1] * TWO_32;
    for (;;) {
      const seq = Atomics.load(w, this.base + SEQ);
      if (seq & 1) continue;
      const n = Atomics.load(w, b) + Atomics.load(w, b + 1) * TWO_32;
      if (Atomics.load(w, this.base + SEQ) === seq) return n;
    }
  }

  /** Puts refused or lost, each reported by a 'failed' event already. */
  get failed(): number {
    return this.failedCount;
  }

  /** completed + failed: puts whose memory the library no longer reads. */
  get settled(): number {
    return this.completed + this.failedCount;
  }

  /** The last failure, if any. */
  get lastError(): RvmaError | undefined {
    return this.last;
  }

  /**
   * Resolves once `level` puts are settled (completed or failed), with the counts then.
   * Rejects with ERR_RVMA_TIMEOUT / ERR_RVMA_ABORTED; the puts go on regardless.
   */
  reach(level: number, options?: WaitOptions): Promise<PutCounterState> {
    const call = 'PutCounter.reach';
    try {
      checkInteger(call, 'level', level, 0, Number.MAX_SAFE_INTEGER);
      const o = parseWaitOptions(call, options);
      if (level > this.issuedCount) {
        throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `${call}: level ${level} is above the ${this.issuedCount} puts issued`);
      }
      if (this.settled >= level) return Promise.resolve(this.state());
      const reach: Reach = {
        level,
        wait: new Wait<PutCounterState>(
          `${call}(${level})`,
          o,
          () => {
            this.reaches = this.reaches.filter((r) => r !== reach);
          },
          this.host.waiting,
        ),
      };
      if (reach.wait.done) return reach.wait.promise;
      this.reaches.push(reach);
      this.arm();
      return reach.wait.promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Frees the counter. Puts still in flight settle first (their slot is reused only then);
   * their failures are still reported. Waits in reach() reject with ERR_RVMA_CLOSED.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const error = new RvmaError('ERR_RVMA_CLOSED', 'PutCounter.reach: the counter was closed');
    for (const r of [...this.reaches]) r.wait.reject(error);
    if (this.endpointGone) return;
    if (this.settled >= this.issuedCount) this.host.releasePutCounter(this.slot);
    else {
      this.releasePending = true;
      this.arm();
    }
  }

  /** Throws unless puts of host may name this counter now. @internal */
  checkUsable(call: string, host: PutCounterHost): void {
    if (this.closed) throw new RvmaError('ERR_RVMA_CLOSED', `${call}: the put counter is closed`);
    if (host !== this.host) throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `${call}: the counter belongs to another endpoint`);
  }

  /** The native put id the next issue() returns. @internal */
  get nextPutId(): number {
    return COUNTER_FLAG + this.slot * TWO_32 + (this.issuedCount % TWO_32);
  }

  /** Counts a put about to be issued (checkUsable first); returns its native put id. @internal */
  /** copied: the native side copies the data now, so its memory need not be held. */
  issue(target: string, vaddr: bigint, data: Uint8Array, head: Uint8Array | undefined, copied: boolean): number {
    const index = this.issuedCount++;
    if (!this.mixed) {
      const d = this.destination;
      if (!d) this.destination = { target, vaddr };
      else if (d.target !== target || d.vaddr !== vaddr) this.mixed = true;
    }
    if (!copied) {
      if (this.held.length && this.settled === index) {
        this.held = [];
        this.heldIndex = [];
      } else if (this.held.length >= HELD_CHECK) {
        this.releaseHeld();
      }
      this.hold(index, data);
      if (head) this.hold(index, head);
    }
    return COUNTER_FLAG + this.slot * TWO_32 + (index % TWO_32);
  }

  private hold(index: number, bytes: Uint8Array): void {
    this.held.push(bytes);
    this.heldIndex.push(index);
  }

  /** Lets go of the memory of puts below the native side's settledBelow. */
  private releaseHeld(): void {
    const below = this.word(SETTLED_BELOW);
    let n = 0;
    while (n < this.heldIndex.length && this.heldIndex[n] < below) n++;
    if (n === 0) return;
    this.held.splice(0, n);
    this.heldIndex.splice(0, n);
  }

  /** A put failed natively (status) or before it got there (error). @internal */
  putFailed(indexMod32: number, status: number, reason: string | undefined): void {
    const context: StatusContext = {
      op: 'Endpoint.put (counted)',
      vaddr: this.destination && !this.mixed ? this.destination.vaddr : 0n,
      node: this.destination && !this.mixed ? this.destination.target : 'one of its targets',
      reason,
    };
    this.failedCount++;
    this.awaitingFailures = false;
    this.report(statusError(status, context), this.indexOf(indexMod32), 1);
    this.check();
  }

  /** The native side refused a put as it was handed over: it never counted it. @internal */
  refused(indexMod32: number, status: number): void {
    this.localFailed++;
    if (!this.endpointGone) this.host.skipCountedPut(this.slot, indexMod32);
    this.putFailed(indexMod32, status, undefined);
  }

  /** A put that never reached the native side failed with error. @internal */
  failedLocally(index: number, error: RvmaError): void {
    this.failedCount++;
    this.localFailed++;
    if (!this.endpointGone) this.host.skipCountedPut(this.slot, index % TWO_32);
    this.report(error, index, 1);
    this.check();
  }

  /** The native counter reached the armed level. @internal */
  reached(): void {
    this.armedAt = 0;
    this.check();
  }

  /** The endpoint closed: puts still in flight are lost. @internal */
  endpointClosed(): void {
    if (this.endpointGone) return;
    this.endpointGone = true;
    const lost = this.issuedCount - this.settled;
    if (lost > 0) {
      this.failedCount += lost;
      this.report(new RvmaError('ERR_RVMA_CLOSED', `the endpoint "${this.host.nodeId}" closed with ${lost} counted puts in flight`), -1, lost);
    }
    this.held = [];
    this.heldIndex = [];
    this.check();
  }

  private report(error: RvmaError, index: number, count: number): void {
    this.last = error;
    const failure: PutFailure = { code: error.code, error, index, count };
    this.emit('failed', failure);
  }

  /** The full index of the latest issued put whose index is indexMod32 modulo 2^32. */
  private indexOf(indexMod32: number): number {
    const top = this.issuedCount - 1;
    return top - ((((top - indexMod32) % TWO_32) + TWO_32) % TWO_32);
  }

  private state(): PutCounterState {
    return { completed: this.completed, failed: this.failed };
  }

  /** Resolves the reaches that are met, then arms the native counter for the next one. */
  private check(): void {
    const settled = this.settled;
    if (settled >= this.issuedCount) {
      this.held = [];
      this.heldIndex = [];
    }
    if (this.reaches.length) {
      const state = this.state();
      for (const r of this.reaches.filter((x) => x.level <= settled)) r.wait.resolve(state);
    }
    if (this.releasePending && settled >= this.issuedCount && !this.endpointGone) {
      this.releasePending = false;
      this.host.releasePutCounter(this.slot);
      return;
    }
    this.arm();
  }

  /**
   * Asks the native side for an event at the lowest level anyone waits for. The native count
   * holds failures whose events are not in yet: when it says the level is reached and ours
   * does not, those events are on their way, and each one checks again.
   */
  private arm(): void {
    if (this.endpointGone || this.awaitingFailures) return;
    let level = this.releasePending ? this.issuedCount : Infinity;
    for (const r of this.reaches) level = Math.min(level, r.level);
    if (level === Infinity) return;
    const nativeLevel = level - this.localFailed;
    if (this.armedAt === nativeLevel) return;
    this.armedAt = nativeLevel;
    if (this.host.armPutCounter(this.slot, nativeLevel)) {
      this.armedAt = 0;
      if (this.settled >= level) queueMicrotask(() => this.check());
      else this.awaitingFailures = true;
    }
  }
}
