// What the rate receiver counted since prepare, in messages, and when it saw the last one it
// expected: the end of a 16-sender measurement is the receiver's moment, not a sender's.
import { type Received } from '../common/protocol';
import { MESSAGE_BYTES } from './rate-config';

const FINISH_WAIT_MS = 5000;

export interface RateReceived extends Received {
  /** process.hrtime.bigint() (CLOCK_MONOTONIC, shared by all processes) when the expected count was reached. */
  lastNs?: string;
}

export class RateTally {
  private count = 0;
  private expected = 0;
  private lastNs: bigint | undefined;
  private failure: unknown;

  reset(expected: number): void {
    this.count = 0;
    this.expected = expected;
    this.lastNs = undefined;
    this.failure = undefined;
  }

  add(messages: number): void {
    this.count += messages;
    if (this.lastNs === undefined && this.count >= this.expected) this.lastNs = process.hrtime.bigint();
  }

  fail(error: unknown): void {
    this.failure ??= error;
  }

  /** Waits (briefly) until `expected` messages were seen, then reports what was counted. */
  async finish(expected: number): Promise<RateReceived> {
    const deadline = Date.now() + FINISH_WAIT_MS;
    while (this.count < expected && Date.now() < deadline && this.failure === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    if (this.failure !== undefined) throw this.failure;
    return { count: this.count, bytes: this.count * MESSAGE_BYTES, lastNs: this.lastNs?.toString() };
  }
}
