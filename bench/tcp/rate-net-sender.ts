// The sending end of the net.Socket rate row: keeps at most `window` messages un-acked; each
// time acks free room it writes the messages that fit as one Buffer (one write per burst).
import * as net from 'node:net';
import { once } from 'node:events';
import { ACK_BYTES, FRAME_BYTES, LENGTH_BYTES } from './rate-net-framing';

export class RateNetSender {
  private sent = 0;
  private acked = 0;
  private target = 0;
  private window = 1;
  private waiting: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private failure: Error | undefined;
  private readonly ack = Buffer.alloc(ACK_BYTES);
  private ackGot = 0;

  private constructor(
    private readonly socket: net.Socket,
    private readonly payload: Buffer,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the receiver closed the connection')));
  }

  static async connect(port: number, payload: Buffer): Promise<RateNetSender> {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await once(socket, 'connect');
    return new RateNetSender(socket, payload);
  }

  /** Sends n messages, `window` un-acked at most; resolves once the receiver acked them all. */
  send(n: number, window: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.target = this.sent + n;
    this.window = window;
    if (this.acked >= this.target) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => (this.waiting = { resolve, reject }));
    this.pump();
    return done;
  }

  close(): void {
    this.socket.end();
  }

  private pump(): void {
    const burst = Math.min(this.target - this.sent, this.window - (this.sent - this.acked));
    if (burst <= 0) return;
    const out = Buffer.allocUnsafe(burst * FRAME_BYTES);
    for (let i = 0, at = 0; i < burst; i++, at += FRAME_BYTES) {
      out.writeUInt32LE(this.payload.length, at);
      this.payload.copy(out, at + LENGTH_BYTES);
    }
    this.sent += burst;
    this.socket.write(out);
  }

  private onData(chunk: Buffer): void {
    let latest = -1;
    for (let at = 0; at < chunk.length; ) {
      const take = Math.min(ACK_BYTES - this.ackGot, chunk.length - at);
      chunk.copy(this.ack, this.ackGot, at, at + take);
      this.ackGot += take;
      at += take;
      if (this.ackGot < ACK_BYTES) break;
      this.ackGot = 0;
      latest = Number(this.ack.readBigUInt64LE(0)); // acks are cumulative: the last one says it all
    }
    if (latest < 0) return;
    if (latest < this.acked || latest > this.sent) {
      return this.fail(new Error(`an ack of ${latest} messages with ${this.acked} acked and ${this.sent} sent`));
    }
    this.acked = latest;
    if (this.acked < this.target) return this.pump();
    const w = this.waiting;
    this.waiting = undefined;
    w?.resolve();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const w = this.waiting;
    this.waiting = undefined;
    w?.reject(error);
  }
}
