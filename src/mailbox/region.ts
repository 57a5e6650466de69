// A registered region for raw one-sided writes: peers write by (key, offset) and both
// sides learn when the bytes landed. The baseline for measuring mailbox puts.
import { type NativeEndpoint } from '../native';
import { RvmaError, hex, statusError } from '../base/errors';
import { type LoopHold, Wait, type WaitOptions, parseWaitOptions } from '../base/wait';

/** A raw write that landed: where and how many bytes. */
export interface RawWrite {
  offset: number;
  bytes: number;
}

/** What a Region needs from its Endpoint (internal). */
export interface RegionHost {
  readonly handle: NativeEndpoint;
  readonly waiting: LoopHold;
  released(id: number): void;
}

export class Region {
  private ready: RawWrite[] = [];
  private waiters: Wait<RawWrite>[] = [];
  private isClosed = false;
  private nextLabel: string | undefined; // names next() waits in their errors

  /** @internal Created by Endpoint.registerRegion. */
  constructor(
    private readonly host: RegionHost,
    /** The key writers name this region by. Hand it only to peers allowed to write. */
    readonly key: bigint,
    /** @internal */ readonly id: number,
    /** The registered memory; writes land here. */
    readonly buffer: Uint8Array,
  ) {}

  get closed(): boolean {
    return this.isClosed;
  }

  /** The next raw write that landed, in arrival order. */
  next(options?: WaitOptions): Promise<RawWrite> {
    const call = 'Region.next';
    try {
      const o = parseWaitOptions(call, options);
      if (this.ready.length) return Promise.resolve(this.ready.shift()!);
      if (this.isClosed) throw this.closedError(call);
      const wait = new Wait<RawWrite>(
        (this.nextLabel ??= `${call} on region ${hex(this.key)}`),
        o,
        (w) => this.waiters.splice(this.waiters.indexOf(w), 1),
        this.host.waiting,
      );
      if (!wait.done) this.waiters.push(wait);
      return wait.promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Stops accepting writes; pending next() calls reject with ERR_RVMA_CLOSED. */
  close(): void {
    if (this.isClosed) return;
    const result = this.host.handle.deregisterRegion(this.key);
    if (result < 0) throw statusError(-result, { op: 'Region.close', vaddr: this.key });
    this.isClosed = true;
    if (result === 1) this.released();
    this.dropWaits();
  }

  /** @internal */
  written(offset: number, bytes: number): void {
    const write = { offset, bytes };
    const wait = this.waiters[0];
    if (wait) wait.resolve(write);
    else this.ready.push(write);
  }

  /** @internal The native side no longer writes into the buffer. */
  released(): void {
    this.host.released(this.id);
  }

  /** @internal */
  endpointClosed(): void {
    this.isClosed = true;
    this.dropWaits();
  }

  private dropWaits(): void {
    this.ready = [];
    const error = this.closedError('Region.next');
    for (const wait of [...this.waiters]) wait.reject(error);
  }

  private closedError(call: string): RvmaError {
    return new RvmaError('ERR_RVMA_CLOSED', `${call}: region ${hex(this.key)} is closed`);
  }
}
