// Raw sockets that speak the tcp wire (support/tcp-wire.ts) by hand, for tests: one exchange
// of bytes, a peer that handshakes and reads, the answers spelled out one per put, and the
// authentication proof computed independently of the native code.
import { createHmac } from 'node:crypto';
import * as net from 'node:net';
import { FrameType, type ParsedFrame, type ParsedHello, VERSION, parseFrames, parseHello, splitAddress } from '../../support/tcp-wire';

export interface RawExchange {
  /** Everything the peer sent before the connection ended. */
  received: Buffer;
  /** How it ended: 'end' (peer closed), 'error' (reset), or 'timeout'. */
  how: 'end' | 'error' | 'timeout';
}

export interface RawExchangeOptions {
  /** Half-close after writing. */
  end?: boolean;
  timeoutMs?: number;
  /** Write in pieces of these sizes (cycled), each after the previous one reached the kernel. */
  pieces?: number[];
}

/**
 * Connects a raw socket, writes `bytes`, optionally half-closes, and collects everything the
 * peer sends until it closes the connection (bounded by timeoutMs).
 */
export function rawExchange(address: string, bytes: Buffer, options: RawExchangeOptions = {}): Promise<RawExchange> {
  const { host, port } = splitAddress(address);
  return new Promise<RawExchange>((resolve) => {
    const chunks: Buffer[] = [];
    let how: RawExchange['how'] = 'end';
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      how = 'timeout';
      socket.destroy();
    }, options.timeoutMs ?? 15_000);
    socket.on('connect', async () => {
      const pieces = options.pieces?.filter((n) => n > 0);
      if (!pieces?.length) {
        socket.write(bytes);
      } else {
        for (let at = 0, i = 0; at < bytes.length && !socket.destroyed; i++) {
          const piece = bytes.subarray(at, at + pieces[i % pieces.length]);
          at += piece.length;
          await new Promise<void>((resolve) => socket.write(piece, () => resolve()));
        }
      }
      if (options.end && !socket.destroyed) socket.end();
    });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {
      if (how === 'end') how = 'error';
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ received: Buffer.concat(chunks), how });
    });
  });
}

/**
 * The answers with each Acks frame spelled out as one Ack per put it covers. Answers come in
 * the order of the puts on the connection, so the ids sent (puts and raw writes, in order,
 * from the frames written) name them. An Acks frame that does not end on the put it should is
 * kept as it is, for the test to see.
 */
export function onePerPut(answers: ParsedFrame[], written: Buffer): ParsedFrame[] {
  const sent = parseFrames(written, 0).frames;
  const ids = sent.filter((f) => f.type === FrameType.Put || f.type === FrameType.RawWrite).map((f) => f.id);
  const out: ParsedFrame[] = [];
  let next = 0;
  for (const f of answers) {
    if (f.type === FrameType.Ack || f.type === FrameType.Nack) next++;
    if (f.type !== FrameType.Acks) {
      out.push(f);
      continue;
    }
    const n = Number(f.offset);
    if (ids[next + n - 1] !== f.id) {
      out.push(f);
      continue;
    }
    for (let i = 0; i < n; i++) out.push({ ...f, type: FrameType.Ack, offset: 0n, id: ids[next + i] });
    next += n;
  }
  return out;
}

/** One side of an authentication transcript (native/auth/peer_auth.cpp). */
export interface AuthParty {
  role: 'dialer' | 'acceptor';
  nonce: Buffer;
  nodeId: string;
  incarnation: bigint;
}

/**
 * The proof `prover` owes `verifier`, computed here independently of the native code: an
 * HMAC-SHA256 under the shared secret over a length-prefixed transcript.
 */
export function authProof(secret: string | Buffer, prover: AuthParty, verifier: AuthParty, transport = 'tcp', version = VERSION): Buffer {
  const u64 = (v: bigint | number): Buffer => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return b;
  };
  const bytes = (b: Buffer): Buffer => Buffer.concat([u64(b.length), b]);
  const party = (p: AuthParty): Buffer =>
    Buffer.concat([Buffer.from([p.role === 'dialer' ? 1 : 2]), p.nonce, bytes(Buffer.from(p.nodeId)), u64(p.incarnation)]);
  const transcript = Buffer.concat([Buffer.from('rvma peer auth 1'), bytes(Buffer.from(transport)), u64(version), party(prover), party(verifier)]);
  return createHmac('sha256', secret).update(transcript).digest();
}

/**
 * A raw socket that speaks the handshake by hand: it waits for the endpoint's hello (sent as
 * soon as it accepts), then the test writes what it likes and reads what comes back.
 */
export class RawPeer {
  readonly received: Buffer[] = [];
  readonly closed: Promise<'end' | 'error'>;
  private constructor(private readonly socket: net.Socket) {
    this.closed = new Promise((resolve) => {
      let how: 'end' | 'error' = 'end';
      socket.on('error', () => (how = 'error'));
      socket.on('close', () => resolve(how));
    });
    socket.on('data', (chunk: Buffer) => this.received.push(chunk));
  }

  /** localAddress: where the connection comes from (another loopback address stands in for another host). */
  static async connect(address: string, timeoutMs = 15_000, localAddress?: string): Promise<{ peer: RawPeer; hello: ParsedHello }> {
    const { host, port } = splitAddress(address);
    const socket = net.connect({ host, port, localAddress });
    const peer = new RawPeer(socket);
    const hello = await peer.until((all) => parseHello(all), timeoutMs);
    if (!hello) throw new Error(`no hello from ${address} within ${timeoutMs} ms`);
    return { peer, hello };
  }

  all(): Buffer {
    return Buffer.concat(this.received);
  }

  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => this.socket.write(bytes, () => resolve()));
  }

  /** Polls what arrived until `check` returns something, or the time is up (undefined). */
  async until<T>(check: (all: Buffer) => T | undefined, timeoutMs = 15_000): Promise<T | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = check(this.all());
      if (found !== undefined || Date.now() > deadline || this.socket.destroyed) return found;
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Waits (bounded) for the endpoint to close the connection. */
  async end(timeoutMs = 15_000): Promise<'end' | 'error' | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const how = await Promise.race([this.closed, late]);
    clearTimeout(timer);
    this.socket.destroy();
    return how;
  }

  destroy(): void {
    this.socket.destroy();
  }
}
