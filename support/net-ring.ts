// LEAP's ring on node:net as a Node user would write it: a TCP connection (setNoDelay) to the
// next rank carrying length-prefixed frames of a fixed-size header and data, ranks found
// through the directory. The baseline the rvma ring is measured against (bench:ring, and the
// pipeline example with RVMA_PIPELINE_RING=net). A send is length + header and the data as two
// writes in cork()/uncork() (one writev, the data not copied, as LEAP's writev).
import { once } from 'node:events';
import * as net from 'node:net';
import * as os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Directory } from '../src/directory';

const PREFIX_BYTES = 4;
const JOIN_TIMEOUT_MS = 30_000;

/** A frame as received: all its bytes (length prefix included), header and data as views. */
export interface NetFrame {
  bytes: Buffer;
  header: Uint8Array;
  data: Uint8Array;
  release(): void;
}

export interface NetRingLimits {
  headerBytes: number;
  /** Largest frame: header + data. */
  frameBytes: number;
}

const label = (group: string, rank: number): string => `leap-ring/${group}/rank/${rank}`;

/** Splits a byte stream into frames; a frame inside one chunk is a view of it, no copy. */
class FrameParser {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixGot = 0;
  private frame: Buffer | undefined;
  private got = 0;

  constructor(
    private readonly limits: NetRingLimits,
    private readonly deliver: (frame: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (!this.frame) {
        if (this.prefixGot === 0 && chunk.length - at >= PREFIX_BYTES) {
          const total = PREFIX_BYTES + this.length(chunk.readUInt32LE(at));
          if (chunk.length - at >= total) {
            this.deliver(chunk.subarray(at, at + total));
            at += total;
            continue;
          }
          this.frame = Buffer.allocUnsafe(total);
          this.got = 0;
        } else {
          const take = Math.min(PREFIX_BYTES - this.prefixGot, chunk.length - at);
          chunk.copy(this.prefix, this.prefixGot, at, at + take);
          this.prefixGot += take;
          at += take;
          if (this.prefixGot < PREFIX_BYTES) return;
          this.prefixGot = 0;
          this.frame = Buffer.allocUnsafe(PREFIX_BYTES + this.length(this.prefix.readUInt32LE(0)));
          this.got = this.prefix.copy(this.frame, 0);
          continue;
        }
      }
      const take = Math.min(this.frame.length - this.got, chunk.length - at);
      chunk.copy(this.frame, this.got, at, at + take);
      this.got += take;
      at += take;
      if (this.got === this.frame.length) {
        const frame = this.frame;
        this.frame = undefined;
        this.deliver(frame);
      }
    }
  }

  private length(n: number): number {
    const { headerBytes, frameBytes } = this.limits;
    if (n < headerBytes || n > frameBytes) throw new Error(`a ${n}-byte frame (expected ${headerBytes}..${frameBytes})`);
    return n;
  }
}

export class NetRing {
  private readonly arrived: NetFrame[] = [];
  private readonly waiters: { resolve: (f: NetFrame) => void; reject: (e: Error) => void }[] = [];
  private failure: Error | undefined;
  private closing = false;
  /** Set by a forwarder: every frame from prev goes here instead of to recv(). */
  onFrame: ((frame: NetFrame) => void) | undefined;
  /** Told of the first failure of either connection. */
  onError: ((error: Error) => void) | undefined;

  private constructor(
    readonly rank: number,
    readonly size: number,
    private readonly limits: NetRingLimits,
    private readonly server: net.Server,
    private readonly next: net.Socket,
    prev: net.Socket,
  ) {
    const parser = new FrameParser(limits, (bytes) => this.arrive(bytes));
    prev.on('data', (chunk: Buffer) => {
      try {
        parser.push(chunk);
      } catch (error) {
        prev.destroy(error as Error);
      }
    });
    for (const socket of [next, prev]) {
      socket.on('error', (error) => this.fail(error));
      socket.on('close', () => this.fail(new Error('a neighbour closed its connection')));
    }
  }

  /** Listens, publishes the address under this rank's label, connects to the next rank, accepts the previous one. */
  static async join(directory: Directory, group: string, rank: number, size: number, limits: NetRingLimits): Promise<NetRing> {
    const server = net.createServer();
    const accepted = once(server, 'connection') as Promise<[net.Socket]>;
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as net.AddressInfo;
    await directory.register({
      nodeId: `leap-${group}-${rank}-${process.pid}`,
      incarnation: randomBytes(8).toString('hex'),
      addresses: { tcp: `tcp://127.0.0.1:${port}` },
      host: os.hostname(),
      pid: process.pid,
      capabilities: ['tcp'],
      labels: [label(group, rank)],
      startTime: Date.now(),
    });
    const deadline = Date.now() + JOIN_TIMEOUT_MS;
    let address: string | undefined;
    while (!(address = (await directory.resolveLabel(label(group, (rank + 1) % size)))?.addresses.tcp)) {
      if (Date.now() > deadline) throw new Error(`rank ${(rank + 1) % size} of ${group} did not appear within ${JOIN_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const url = new URL(address.replace(/^tcp:/, 'http:'));
    const next = net.connect(Number(url.port), url.hostname);
    next.setNoDelay(true);
    await once(next, 'connect');
    const [prev] = await accepted;
    prev.setNoDelay(true);
    return new NetRing(rank, size, limits, server, next, prev);
  }

  /** Length + header, then the data, in one corked write. */
  send(header: Uint8Array, data: Uint8Array): undefined {
    if (this.failure) throw this.failure;
    const head = Buffer.allocUnsafe(PREFIX_BYTES + header.byteLength);
    head.writeUInt32LE(header.byteLength + data.byteLength, 0);
    head.set(header, PREFIX_BYTES);
    this.next.cork();
    this.next.write(head);
    this.next.write(data);
    this.next.uncork();
    return undefined;
  }

  /** A forwarder's send: the frame's bytes as received, in one write. */
  forward(frame: NetFrame): void {
    this.next.write(frame.bytes);
  }

  recv(): Promise<NetFrame> {
    const ready = this.arrived.shift();
    if (ready) return Promise.resolve(ready);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  async close(): Promise<void> {
    this.closing = true;
    this.next.end();
    this.server.close();
  }

  private arrive(bytes: Buffer): void {
    const frame: NetFrame = {
      bytes,
      header: bytes.subarray(PREFIX_BYTES, PREFIX_BYTES + this.limits.headerBytes),
      data: bytes.subarray(PREFIX_BYTES + this.limits.headerBytes),
      release: () => undefined,
    };
    if (this.onFrame) return this.onFrame(frame);
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(frame);
    else this.arrived.push(frame);
  }

  private fail(error: Error): void {
    if (this.failure || this.closing) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w.reject(error);
    this.onError?.(error);
  }
}
