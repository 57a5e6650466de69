// One settle-once wait with a timeout and an AbortSignal; every public wait is built on it.
import { RvmaError } from './errors';
import { checkOptions, invalid } from './validate';

export interface WaitOptions {
  /** Milliseconds before the wait rejects with ERR_RVMA_TIMEOUT. Default: no limit. */
  timeout?: number;
  /** Rejects the wait with ERR_RVMA_ABORTED when aborted. */
  signal?: AbortSignal;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export function checkWaitOptions(call: string, timeout: unknown, signal: unknown): void {
  // setTimeout cannot wait longer than 2^31-1 ms; Infinity means no limit.
  if (timeout !== undefined && (typeof timeout !== 'number' || !(timeout >= 0) || (timeout > MAX_TIMEOUT_MS && timeout !== Infinity))) {
    throw invalid(call, `timeout must be a number of milliseconds in [0, ${MAX_TIMEOUT_MS}] or Infinity, got ${String(timeout)}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalid(call, 'signal must be an AbortSignal');
  }
}

// No timeout, no signal: shared, so waits without options allocate nothing for them. Not
// frozen: a frozen object has a map of its own, and reads of these options would see two.
const NO_WAIT_OPTIONS: Readonly<WaitOptions> = { timeout: undefined, signal: undefined };

/** The caller's options, checked, as an object of one fixed shape (fast property reads later). */
export function parseWaitOptions(call: string, options: unknown): WaitOptions {
  if (options === undefined) return NO_WAIT_OPTIONS;
  const o = checkOptions<WaitOptions>(call, options, ['timeout', 'signal']);
  checkWaitOptions(call, o.timeout, o.signal);
  return { timeout: o.timeout, signal: o.signal };
}

// One 'abort' listener per signal, however many waits share it: Node warns from 11 listeners on
// (MaxListenersExceededWarning), and sharing one signal across many puts is ordinary use.
interface Listening {
  waits: Set<() => void>;
  fire: () => void;
}
const aborts = new WeakMap<AbortSignal, Listening>();

/** Runs fn once when signal aborts; the returned function undoes that. */
function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let listening = aborts.get(signal);
  if (!listening) {
    const waits = new Set<() => void>();
    const fire = (): void => {
      aborts.delete(signal);
      for (const f of [...waits]) f();
    };
    listening = { waits, fire };
    aborts.set(signal, listening);
    signal.addEventListener('abort', fire, { once: true });
  }
  const { waits, fire } = listening;
  waits.add(fn);
  return () => {
    waits.delete(fn);
    if (waits.size === 0 && aborts.get(signal) === listening) {
      aborts.delete(signal);
      signal.removeEventListener('abort', fire);
    }
  };
}

/** Holds the event loop while something waits (an endpoint's own waits do: see Endpoint). */
export type LoopHold = (delta: 1 | -1) => void;

export class Wait<T> {
  readonly promise: Promise<T>;
  private resolveFn!: (value: T) => void;
  private rejectFn!: (error: Error) => void;
  private timer: NodeJS.Timeout | undefined;
  private settled = false;
  private unlisten: (() => void) | undefined;

  /**
   * what names the wait in its timeout and abort errors. onSettle runs once when a
   * registered wait ends, whichever way (to unlink it from its queue). A wait whose signal
   * was already aborted is born done and never calls it. hold, if given, holds the event loop
   * from then until the wait ends.
   */
  constructor(
    what: string,
    options: WaitOptions,
    private readonly onSettle: (wait: Wait<T>) => void,
    private readonly hold?: LoopHold,
  ) {
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolveFn = resolve;
      this.rejectFn = reject;
    });
    const { timeout, signal } = options;
    if (signal) {
      if (signal.aborted) {
        // Already aborted: the caller never registers this wait, so onSettle does not run.
        this.settled = true;
        this.rejectFn(abortError(what, signal));
        return;
      }
      this.unlisten = onAbort(signal, () => this.reject(abortError(what, signal)));
    }
    hold?.(1);
    if (timeout !== undefined && timeout !== Infinity) {
      this.timer = setTimeout(
        () => this.reject(new RvmaError('ERR_RVMA_TIMEOUT', `${what} timed out after ${timeout} ms`)),
        timeout,
      );
    }
  }

  get done(): boolean {
    return this.settled;
  }

  resolve(value: T): void {
    if (this.finish()) this.resolveFn(value);
  }

  reject(error: Error): void {
    if (this.finish()) this.rejectFn(error);
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
    this.unlisten?.();
    this.hold?.(-1);
    this.onSettle(this);
    return true;
  }
}

function abortError(what: string, signal: AbortSignal): RvmaError {
  return new RvmaError('ERR_RVMA_ABORTED', `${what} was aborted`, { cause: signal.reason });
}
