// Receiver for the net.Socket variant: reads each length-prefixed message completely into a
// destination buffer (where a mailbox put would land), then answers an 8-byte ack.
import * as net from 'node:net';
import { once } from 'node:events';
import { type Received, type Target } from '../common/protocol';
import { Tally } from '../common/tally';
import { ACK_BYTES, FRAME_HEADER_BYTES } from './framing';

export class NetReceiver {
  private readonly tally = new Tally();

  private constructor(
    private readonly server: net.Server,
    readonly address: string,
  ) {
    server.on('connection', (socket) => this.serve(socket));
  }

  static async create(): Promise<NetReceiver> {
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as net.AddressInfo;
    return new NetReceiver(server, `tcp://127.0.0.1:${port}`);
  }

  prepare(): Target {
    this.tally.reset();
    return {};
  }

  finish(expected: number): Promise<Received> {
    return this.tally.finish(expected);
  }

  async close(): Promise<void> {
    this.server.close();
  }

  private serve(socket: net.Socket): void {
    socket.setNoDelay(true);
    const header = Buffer.alloc(FRAME_HEADER_BYTES);
    let headerGot = 0;
    let dest = Buffer.alloc(0);
    let len = 0;
    let seq = 0;
    let got = -1; // -1: reading the header
    socket.on('error', (error) => this.tally.fail(error));
    socket.on('data', (chunk: Buffer) => {
      let at = 0;
      while (at < chunk.length) {
        if (got < 0) {
          const take = Math.min(FRAME_HEADER_BYTES - headerGot, chunk.length - at);
          chunk.copy(header, headerGot, at, at + take);
          headerGot += take;
          at += take;
          if (headerGot < FRAME_HEADER_BYTES) return;
          headerGot = 0;
          len = header.readUInt32LE(0);
          seq = header.readUInt32LE(4);
          if (dest.length < len) dest = Buffer.allocUnsafe(len);
          got = 0;
        }
        if (got < len) {
          const take = Math.min(len - got, chunk.length - at);
          chunk.copy(dest, got, at, at + take);
          got += take;
          at += take;
          if (got < len) return;
        }
        const ack = Buffer.allocUnsafe(ACK_BYTES);
        ack.writeUInt32LE(seq, 0);
        ack.writeUInt32LE(0, 4);
        socket.write(ack);
        this.tally.add(len);
        got = -1;
      }
    });
  }
}
