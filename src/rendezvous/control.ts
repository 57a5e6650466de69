// The control channel: a many-to-one mailbox of ops epochs that receives control messages,
// and sends to peers' control mailboxes with a bounded retry when they are momentarily full.
// Each message comes with the node it arrived from (reportSender), which the manager checks
// against the node the message claims.
import { Endpoint } from '../mailbox/endpoint';
import { RvmaError } from '../mailbox/errors';
import { Mailbox } from '../mailbox/mailbox';
import { ControlMessage, CONTROL_VADDR, decode, encode } from './messages';

export interface ControlOptions {
  /** Buffers posted to the control mailbox (each holds one message). */
  buffers: number;
  /** Largest control message. */
  bufferBytes: number;
  /** Limit for one control message to be accepted by the peer (retries included). */
  sendTimeoutMs: number;
}

export class ControlChannel {
  private readonly mailbox: Mailbox;
  /** Settles when the channel closed (the receive loop ended). */
  readonly done: Promise<void>;

  constructor(
    private readonly endpoint: Endpoint,
    private readonly options: ControlOptions,
    onMessage: (message: ControlMessage, sender: string) => void,
    onBadMessage: (error: Error, sender: string) => void,
  ) {
    this.mailbox = endpoint.openAt('RendezvousMgr', CONTROL_VADDR, {
      epoch: 'ops',
      threshold: 1,
      maxBuffers: options.buffers,
      reportSender: true,
    });
    for (let i = 0; i < options.buffers; i++) this.mailbox.post(options.bufferBytes);
    this.done = this.receive(onMessage, onBadMessage);
  }

  private async receive(onMessage: (m: ControlMessage, sender: string) => void, onBad: (e: Error, sender: string) => void): Promise<void> {
    for await (const completion of this.mailbox.completions()) {
      const sender = completion.sender ?? '';
      let message: ControlMessage | undefined;
      try {
        message = decode(completion.buffer.subarray(0, completion.bytes));
      } catch (error) {
        onBad(error as Error, sender);
      }
      if (!this.mailbox.closed) this.mailbox.post(completion.buffer); // decoded: reuse at once
      if (!message) continue;
      try {
        onMessage(message, sender);
      } catch (error) {
        onBad(error as Error, sender); // one bad message must not stop the channel
      }
    }
  }

  /** Puts a message into a peer's control mailbox (node id or label), retrying while it is full. */
  async send(target: string, message: ControlMessage): Promise<void> {
    const bytes = encode(message);
    const deadline = Date.now() + this.options.sendTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      const timeout = Math.max(1, deadline - Date.now());
      try {
        return await this.endpoint.put(target, CONTROL_VADDR, bytes, { timeout });
      } catch (error) {
        const full = error instanceof RvmaError && error.code === 'ERR_RVMA_NO_BUFFER';
        if (!full || Date.now() >= deadline) throw error;
        await new Promise((r) => setTimeout(r, Math.min(2 ** attempt, 50)));
      }
    }
  }

  close(): void {
    this.mailbox.close(); // ends the receive loop
  }
}
