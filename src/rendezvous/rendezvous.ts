// One step's rendezvous: TensorFlow's tag matching. A recv that comes first parks its
// callback, a send that comes first parks the tensor; the second completes the pair.
import { RvmaError } from '../base/errors';
import { checkBoolean, checkOptions, invalid } from '../base/validate';
import { Wait, type WaitOptions, checkWaitOptions, parseWaitOptions } from '../base/wait';
import { type Tensor, toTensor } from '../tensor/tensor';
import { type ParsedKey, normalKey } from './key';

export interface Received {
  tensor: Tensor;
  isDead: boolean;
  /**
   * A remote recv's tensor views a buffer of the manager's receive pool: release() hands it back
   * so that the next recv of that size reuses it (warm memory, no page faults). Do not touch the
   * tensor's data afterwards. Not calling it is fine: the buffer is then garbage-collected.
   * Absent for local recvs.
   */
  release?(): void;
}

/** Options of Rendezvous.recv. */
export interface TensorRecvOptions extends WaitOptions {
  /**
   * A remote recv's buffer goes back to the receive pool when its step is cleaned up, as if
   * release() were called then (RendezvousOptions.recycle, the default, tells more).
   */
  recycle?: boolean;
}

type LocalDone = (error: Error | undefined, item?: Received) => void;

interface Slot {
  sent?: Received;
  waiting?: LocalDone;
}

/** What a Rendezvous needs from its manager (internal). */
export interface RendezvousHost {
  isLocalTask(task: string): boolean;
  recvRemote(rendezvous: Rendezvous, key: string, parsed: Readonly<ParsedKey>, options: WaitOptions, recycle: boolean | undefined): Promise<Received>;
  /** Puts a sent tensor straight to its remote receiver if the key is pushed; false: park it. */
  push(rendezvous: Rendezvous, key: string, item: Received): boolean;
  /** The step aborted: remote recvs of it must fail too. */
  aborted(rendezvous: Rendezvous, error: Error): void;
}

export class Rendezvous {
  private readonly slots = new Map<string, Slot>();
  private aborted: Error | undefined;
  private lazyAbort: (() => Error) | undefined;

  /** @internal Created by RendezvousMgr.find. */
  constructor(
    readonly stepId: bigint,
    private readonly host: RendezvousHost,
  ) {}

  /** Makes a tensor available under key for this step (TensorFlow's Send). */
  send(key: string, tensor: unknown, options?: { isDead?: boolean }): void {
    const call = 'Rendezvous.send';
    const o = checkOptions<{ isDead?: boolean }>(call, options, ['isDead']);
    const { parsed, key: normal } = normalKey(key);
    key = normal; // one key for every spelling of its incarnation
    if (!this.host.isLocalTask(parsed.srcTask)) {
      throw invalid(call, `this endpoint does not host the key's source task ${parsed.srcTask}`);
    }
    const isDead = o.isDead === undefined ? false : checkBoolean(call, 'isDead', o.isDead);
    const item: Received = { tensor: toTensor(call, tensor), isDead };
    if (this.abortError) throw this.abortError;
    const slot = this.slots.get(key);
    if (slot?.sent) throw invalid(call, `key was already sent in step ${this.stepId}: ${key}`);
    if (slot?.waiting) {
      this.slots.delete(key);
      slot.waiting(undefined, item);
      return;
    }
    if (this.host.push(this, key, item)) return;
    this.slots.set(key, { sent: item });
  }

  /** Receives the tensor sent under key in this step, from this process or a remote one. */
  recv(key: string, options?: TensorRecvOptions): Promise<Received> {
    const call = 'Rendezvous.recv';
    try {
      const { wait: o, recycle } = parseRecvOptions(call, options);
      const { parsed, key: normal } = normalKey(key);
      key = normal;
      if (!this.host.isLocalTask(parsed.dstTask)) {
        throw invalid(call, `this endpoint does not host the key's destination task ${parsed.dstTask}`);
      }
      if (this.abortError) throw this.abortError;
      if (!this.host.isLocalTask(parsed.srcTask)) return this.host.recvRemote(this, key, parsed, o, recycle);
      const wait = new Wait<Received>(`${call} of ${key}`, o, () => {
        const slot = this.slots.get(key);
        if (slot?.waiting === done) this.slots.delete(key);
      });
      const done: LocalDone = (error, item) => (error ? wait.reject(error) : wait.resolve(item!));
      if (!wait.done) this.recvLocal(key, done);
      return wait.promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Fails every pending recv with error; later sends and recvs of this step fail too. */
  startAbort(error: Error): void {
    if (this.abortError) return;
    this.aborted = error;
    const slots = [...this.slots.values()];
    this.slots.clear();
    for (const slot of slots) slot.waiting?.(error);
    this.host.aborted(this, error);
  }

  /**
   * @internal Aborts a step that has nothing parked (cleanup's usual case) without building the
   * error, and its stack, until someone asks for it. False when something is parked.
   */
  retireIdle(makeError: () => Error): boolean {
    if (this.slots.size > 0) return false;
    if (!this.aborted) this.lazyAbort ??= makeError;
    return true;
  }

  get abortError(): Error | undefined {
    if (!this.aborted && this.lazyAbort) {
      this.aborted = this.lazyAbort();
      this.lazyAbort = undefined;
    }
    return this.aborted;
  }

  /** @internal TensorFlow's RecvLocalAsync: done runs once the tensor is there, or with an error. */
  recvLocal(key: string, done: LocalDone): void {
    if (this.abortError) return done(this.abortError);
    const slot = this.slots.get(key);
    if (slot?.sent) {
      this.slots.delete(key);
      return done(undefined, slot.sent);
    }
    if (slot?.waiting) return done(new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `key is already being received: ${key}`));
    this.slots.set(key, { waiting: done });
  }

  /**
   * @internal A tensor a remote request took and never delivered (the receiver gave up) goes
   * back: to a recv waiting for it, pushed if the key is (unless `pushable` is false: a push just
   * failed), or parked again for the next recv. Dropped if the step aborted or a later send of
   * the key is parked already.
   */
  restore(key: string, item: Received, pushable = true): boolean {
    if (this.abortError) return false;
    const slot = this.slots.get(key);
    if (slot?.waiting) {
      this.slots.delete(key);
      slot.waiting(undefined, item);
      return true;
    }
    if (slot?.sent) return false;
    if (pushable && this.host.push(this, key, item)) return true;
    this.slots.set(key, { sent: item });
    return true;
  }

  /** @internal Whether a tensor is parked under key. */
  holdsSent(key: string): boolean {
    return this.slots.get(key)?.sent !== undefined;
  }

  /** @internal The tensor parked under key (a push that came before its recv), taken. */
  takeSent(key: string): Received | undefined {
    const slot = this.slots.get(key);
    if (!slot?.sent) return undefined;
    this.slots.delete(key);
    return slot.sent;
  }

  /** @internal Drops a parked local recv that gave up (a remote request that timed out). */
  cancelLocal(key: string, done: LocalDone): void {
    const slot = this.slots.get(key);
    if (slot?.waiting === done) this.slots.delete(key);
  }
}

interface ParsedRecvOptions {
  wait: WaitOptions;
  recycle: boolean | undefined;
}
// Shared by recvs without options: nothing allocated for them.
const NO_RECV_OPTIONS: ParsedRecvOptions = { wait: parseWaitOptions('Rendezvous.recv', undefined), recycle: undefined };

/** recv's options, checked: the wait's as parseWaitOptions makes them (one shape), and recycle. */
function parseRecvOptions(call: string, options: unknown): ParsedRecvOptions {
  if (options === undefined) return NO_RECV_OPTIONS;
  const o = checkOptions<TensorRecvOptions>(call, options, ['timeout', 'signal', 'recycle']);
  checkWaitOptions(call, o.timeout, o.signal);
  return { wait: { timeout: o.timeout, signal: o.signal }, recycle: o.recycle === undefined ? undefined : checkBoolean(call, 'recycle', o.recycle) };
}
