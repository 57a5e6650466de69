// Sender for the net.Socket variant: header and payload go out in one corked write; the
// message's promise resolves when its ack arrives (acks come back in order).
import * as net from 'node:net';
import { once } from 'node:events';
import { measure } from '../common/lanes';
import { type Measurement, type Scenario } from '../common/protocol';
import { ACK_BYTES, FRAME_HEADER_BYTES } from './framing';

export class NetSender {
  private readonly sources = new Map<number, Buffer>();
  private readonly waiting: { seq: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  private nextSeq = 0;
  private readonly ack = Buffer.alloc(ACK_BYTES);
  private ackGot = 0;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.failAll(error));
    socket.on('close', () => this.failAll(new Error('receiver closed the connection')));
  }

  static async create(address: string): Promise<NetSender> {
    const url = new URL(address.replace(/^tcp:/, 'http:'));
    const socket = net.connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    await once(socket, 'connect');
    return new NetSender(socket);
  }

  run(s: Scenario): Promise<Measurement> {
    let data = this.sources.get(s.size);
    if (!data) this.sources.set(s.size, (data = Buffer.alloc(s.size, 0xa5)));
    const source = data;
    return measure(s, () => this.send(source));
  }

  async close(): Promise<void> {
    this.socket.end();
  }

  private send(data: Buffer): Promise<void> {
    const seq = this.nextSeq++ >>> 0;
    const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
    header.writeUInt32LE(data.length, 0);
    header.writeUInt32LE(seq, 4);
    this.socket.cork();
    this.socket.write(header);
    this.socket.write(data);
    this.socket.uncork();
    return new Promise((resolve, reject) => this.waiting.push({ seq, resolve, reject }));
  }

  private onData(chunk: Buffer): void {
    for (let at = 0; at < chunk.length; ) {
      const take = Math.min(ACK_BYTES - this.ackGot, chunk.length - at);
      chunk.copy(this.ack, this.ackGot, at, at + take);
      this.ackGot += take;
      at += take;
      if (this.ackGot < ACK_BYTES) return;
      this.ackGot = 0;
      const seq = this.ack.readUInt32LE(0);
      const next = this.waiting.shift();
      if (!next || next.seq !== seq || this.ack.readUInt32LE(4) !== 0) {
        this.failAll(new Error(`unexpected ack ${seq}`));
        return;
      }
      next.resolve();
    }
  }

  private failAll(error: Error): void {
    for (const w of this.waiting.splice(0)) w.reject(error);
  }
}
