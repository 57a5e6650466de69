// The receiving end of the net.Socket rate row: a server that takes any number of senders'
// connections, reads each message into a destination record, counts it, and answers every
// data chunk with one cumulative ack (not one per message), as a user batching acks would.
import * as net from 'node:net';
import { once } from 'node:events';
import { ACK_BYTES, FRAME_BYTES, LENGTH_BYTES } from './rate-net-framing';
import { type RateTally } from './rate-tally';

export class RateNetReceiver {
  private constructor(
    private readonly server: net.Server,
    private readonly tally: RateTally,
  ) {
    server.on('connection', (socket) => this.serve(socket));
  }

  /** Counts into tally (the receiver's, reset per measurement). */
  static async create(tally: RateTally): Promise<RateNetReceiver> {
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new RateNetReceiver(server, tally);
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  close(): void {
    this.server.close();
  }

  private serve(socket: net.Socket): void {
    socket.setNoDelay(true);
    const record = Buffer.alloc(FRAME_BYTES - LENGTH_BYTES); // where the message lands
    let partial: Buffer | undefined; // the start of a message the last chunk cut off
    let received = 0n;
    socket.on('error', (error) => this.tally.fail(error));
    socket.on('data', (chunk: Buffer) => {
      const data = partial ? Buffer.concat([partial, chunk]) : chunk;
      let at = 0;
      let messages = 0;
      for (; data.length - at >= FRAME_BYTES; at += FRAME_BYTES, messages++) {
        const length = data.readUInt32LE(at);
        if (length !== record.length) {
          this.tally.fail(new Error(`a net.Socket message of ${length} bytes, expected ${record.length}`));
          socket.destroy();
          return;
        }
        data.copy(record, 0, at + LENGTH_BYTES, at + FRAME_BYTES);
      }
      partial = at < data.length ? Buffer.from(data.subarray(at)) : undefined;
      if (!messages) return;
      received += BigInt(messages);
      const ack = Buffer.allocUnsafe(ACK_BYTES);
      ack.writeBigUInt64LE(received);
      socket.write(ack);
      this.tally.add(messages);
    });
  }
}
