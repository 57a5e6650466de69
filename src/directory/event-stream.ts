// A bounded push-to-async-iterator queue for watch(): a consumer that stops reading gets
// an ERR_RVMA_OVERFLOW instead of memory growing without limit.
import { RvmaError } from '../base/errors';

export class EventStream<T> implements AsyncIterableIterator<T> {
  private queue: T[] = [];
  private waiting: { resolve: (r: IteratorResult<T>) => void; reject: (e: Error) => void } | undefined;
  private ended = false;
  get done(): boolean {
    return this.ended;
  }
  private error: Error | undefined;

  constructor(
    private readonly limit: number,
    private readonly onEnd: () => void,
    signal?: AbortSignal,
  ) {
    // Already aborted: born ended, without calling onEnd (the caller never registered it).
    if (signal?.aborted) this.ended = true;
    else signal?.addEventListener('abort', () => this.end(), { once: true });
  }

  push(value: T): void {
    if (this.ended) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w.resolve({ value, done: false });
      return;
    }
    if (this.queue.length >= this.limit) {
      this.fail(new RvmaError('ERR_RVMA_OVERFLOW', `watch: more than ${this.limit} events were not consumed`));
      return;
    }
    this.queue.push(value);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
    this.waiting?.resolve({ value: undefined, done: true });
    this.waiting = undefined;
  }

  fail(error: Error): void {
    this.error = error;
    this.queue = [];
    const w = this.waiting;
    this.waiting = undefined;
    this.end();
    w?.reject(error);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.queue.length) return Promise.resolve({ value: this.queue.shift()!, done: false });
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
