// The control channel: a many-to-one mailbox of ops epochs that receives control messages,
// and sends to peers' control mailboxes with a bounded retry when they are momentarily full.
// Each message comes with the node it arrived from (reportSender), which the manager checks
// against the node the message claims. Answers a peer can provoke without limit (refusals,
// push acceptances: nothing held here accounts for them) are bounded per peer while they wait
// to be accepted: a peer that takes none (its mailbox stays full) would otherwise hold every
// answer it provoked here, each retrying until sendTimeoutMs.
import { type Endpoint } from '../mailbox/endpoint';
import { RvmaError } from '../base/errors';
import { type Mailbox } from '../mailbox/mailbox';
import { type RendezvousCounters } from './counters';
import { type ControlMessage, CONTROL_VADDR, decode, encode } from './messages';

export interface ControlOptions {
  /** Buffers posted to the control mailbox (each holds one message). */
  buffers: number;
  /** Largest control message. */
  bufferBytes: number;
  /** Limit for one control message to be accepted by the peer (retries included). */
  sendTimeoutMs: number;
  /** Bounded messages to one peer not yet accepted; past it such a send is refused with ERR_RVMA_OVERFLOW. */
  maxWaitingPerPeer: number;
}

export class ControlChannel {
  private readonly mailbox: Mailbox;
  /** Settles when the channel closed (the receive loop ended). */
  readonly done: Promise<void>;
  /** Bounded messages not yet accepted, by peer. */
  private readonly waiting = new Map<string, number>();

  constructor(
    private readonly endpoint: Endpoint,
    private readonly options: ControlOptions,
    private readonly counters: Pick<RendezvousCounters, 'unsent'>,
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

  /**
   * Puts a message into a peer's control mailbox (node id or label), retrying while it is full.
   * `bounded`: an answer the peer could provoke without limit. It is refused at once with
   * ERR_RVMA_OVERFLOW, unsent, while maxWaitingPerPeer others of its kind to that peer are not
   * accepted yet. Other messages are bounded where they come from: by the application's calls,
   * or by the requests held for that peer.
   */
  async send(target: string, message: ControlMessage, bounded = false): Promise<void> {
    if (!bounded) return this.put(target, encode(message));
    const waiting = this.waiting.get(target) ?? 0;
    if (waiting >= this.options.maxWaitingPerPeer) {
      this.counters.unsent++;
      throw new RvmaError(
        'ERR_RVMA_OVERFLOW',
        `rendezvous: ${waiting} answers to ${target} are not accepted yet (maxRequestsPerPeer); this one was not sent`,
      );
    }
    this.waiting.set(target, waiting + 1);
    try {
      await this.put(target, encode(message));
    } finally {
      const left = this.waiting.get(target)! - 1;
      if (left > 0) this.waiting.set(target, left);
      else this.waiting.delete(target);
    }
  }

  private async put(target: string, bytes: Uint8Array): Promise<void> {
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
