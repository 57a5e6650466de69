// What a receiver counted since the last prepare, and the first failure it met; finish()
// waits briefly for stragglers, since a sender's last ack can overtake the receiver's own event.
import { type Received } from './protocol';

const FINISH_WAIT_MS = 5000;

export class Tally {
  private received: Received = { count: 0, bytes: 0 };
  private failure: unknown;

  reset(): void {
    this.received = { count: 0, bytes: 0 };
  }

  add(bytes: number): void {
    this.received.count++;
    this.received.bytes += bytes;
  }

  fail(error: unknown): void {
    this.failure ??= error;
  }

  /** Waits (briefly) until `expected` messages were seen, then reports what was counted. */
  async finish(expected: number): Promise<Received> {
    const deadline = Date.now() + FINISH_WAIT_MS;
    while (this.received.count < expected && Date.now() < deadline && this.failure === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    if (this.failure !== undefined) throw this.failure;
    return this.received;
  }
}
