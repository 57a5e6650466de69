// The tcp provider's wire format, written independently of native/wire so tests can speak
// (and mis-speak) the protocol over raw sockets. Little-endian throughout.
//   hello:  u32 magic | u16 version | u16 nodeIdLen | u64 incarnation | u16 addressLen |
//           u16 flags (1: auth) | 12 zero bytes | 32-byte nonce | nodeId | address
//   then, when both sides authenticate, a 32-byte proof each way before any frame
//   header: u8 type | u8 flags | u16 status | u32 parts | u64 id | u64 vaddr | u64 offset | u64 len
//   a Put with parts >= 2 (one part of a striped put) is followed by u64 putOffset | u64 putLen
//   a Floor carries its floor in id, a Window its window's name
import { createHmac } from 'node:crypto';
import * as net from 'node:net';

export const MAGIC = 0x414d5652;
export const VERSION = 7; // native/wire/frames.h kVersion
export const HELLO_BYTES = 32; // the fixed part
export const NONCE_BYTES = 32;
export const PROOF_BYTES = 32;
export const HELLO_AUTH = 1;
export const HEADER_BYTES = 40;
export const PART_EXT_BYTES = 16;
export const MAX_ERROR_TEXT = 1024;

export const enum FrameType {
  Put = 1,
  Ack = 2,
  Nack = 3,
  Ping = 4,
  Pong = 5,
  Error = 6,
  RawWrite = 7,
  /** id: the floor (every put id below it the sender sent is settled). */
  Floor = 8,
  /** id: the receiver's name for its window of the sender's puts; puts go out only after it. */
  Window = 9,
  /** offset (>= 2) puts placed, the last of them put id: one answer for a run of puts. */
  Acks = 10,
}
export const FLAG_APPEND = 1;
export const FLAG_LAZY_ACK = 2;
export const FLAG_LATE_ACK = 4; // only with FLAG_LAZY_ACK

export interface HelloFields {
  magic?: number;
  version?: number;
  nodeId: string;
  address?: string;
  incarnation?: bigint;
  /** Overrides the encoded node id length (to lie about it). */
  nodeIdLen?: number;
  addressLen?: number;
  /** Hello flags (HELLO_AUTH). */
  flags?: number;
  /** Default: 32 zero bytes. */
  nonce?: Buffer;
  /** Written at byte 20 (must be zero). */
  reservedByte?: number;
}

export function encodeHello(h: HelloFields): Buffer {
  const id = Buffer.from(h.nodeId);
  const address = Buffer.from(h.address ?? '');
  const fixed = Buffer.alloc(HELLO_BYTES);
  fixed.writeUInt32LE(h.magic ?? MAGIC, 0);
  fixed.writeUInt16LE(h.version ?? VERSION, 4);
  fixed.writeUInt16LE(h.nodeIdLen ?? id.length, 6);
  fixed.writeBigUInt64LE(h.incarnation ?? 1n, 8);
  fixed.writeUInt16LE(h.addressLen ?? address.length, 16);
  fixed.writeUInt16LE(h.flags ?? 0, 18);
  if (h.reservedByte) fixed[20] = h.reservedByte;
  return Buffer.concat([fixed, h.nonce ?? Buffer.alloc(NONCE_BYTES), id, address]);
}

export interface Header {
  type: number;
  flags?: number;
  status?: number;
  parts?: number;
  id?: bigint;
  vaddr?: bigint;
  offset?: bigint;
  len?: bigint;
}

export function encodeHeader(f: Header, out = Buffer.alloc(HEADER_BYTES), at = 0): Buffer {
  out[at] = f.type;
  out[at + 1] = f.flags ?? 0;
  out.writeUInt16LE(f.status ?? 0, at + 2);
  out.writeUInt32LE(f.parts ?? 0, at + 4);
  out.writeBigUInt64LE(f.id ?? 0n, at + 8);
  out.writeBigUInt64LE(f.vaddr ?? 0n, at + 16);
  out.writeBigUInt64LE(f.offset ?? 0n, at + 24);
  out.writeBigUInt64LE(f.len ?? 0n, at + 32);
  return out;
}

export interface ParsedHello {
  magic: number;
  version: number;
  flags: number;
  incarnation: bigint;
  nonce: Buffer;
  nodeId: string;
  address: string;
  /** Bytes the hello took. */
  size: number;
}

/** The hello at the start of buf, or undefined if buf does not hold all of it yet. */
export function parseHello(buf: Buffer): ParsedHello | undefined {
  if (buf.length < HELLO_BYTES) return undefined;
  const idLen = buf.readUInt16LE(6);
  const addressLen = buf.readUInt16LE(16);
  const idAt = HELLO_BYTES + NONCE_BYTES;
  const size = idAt + idLen + addressLen;
  if (buf.length < size) return undefined;
  return {
    magic: buf.readUInt32LE(0),
    version: buf.readUInt16LE(4),
    flags: buf.readUInt16LE(18),
    incarnation: buf.readBigUInt64LE(8),
    nonce: Buffer.from(buf.subarray(HELLO_BYTES, idAt)),
    nodeId: buf.subarray(idAt, idAt + idLen).toString(),
    address: buf.subarray(idAt + idLen, size).toString(),
    size,
  };
}

export interface ParsedFrame {
  type: number;
  flags: number;
  status: number;
  parts: number;
  id: bigint;
  vaddr: bigint;
  offset: bigint;
  len: bigint;
  /** Error text (Error frames only). */
  text?: string;
}

/** Frames from buf[from..]; a trailing partial frame is returned as `rest` bytes. */
export function parseFrames(buf: Buffer, from: number): { frames: ParsedFrame[]; rest: number } {
  const frames: ParsedFrame[] = [];
  let at = from;
  while (buf.length - at >= HEADER_BYTES) {
    const f: ParsedFrame = {
      type: buf[at],
      flags: buf[at + 1],
      status: buf.readUInt16LE(at + 2),
      parts: buf.readUInt32LE(at + 4),
      id: buf.readBigUInt64LE(at + 8),
      vaddr: buf.readBigUInt64LE(at + 16),
      offset: buf.readBigUInt64LE(at + 24),
      len: buf.readBigUInt64LE(at + 32),
    };
    let size = HEADER_BYTES;
    if (f.type === FrameType.Error) {
      if (f.len > BigInt(MAX_ERROR_TEXT) || buf.length - at < HEADER_BYTES + Number(f.len)) break;
      f.text = buf.subarray(at + HEADER_BYTES, at + HEADER_BYTES + Number(f.len)).toString();
      size += Number(f.len);
    } else if (f.type === FrameType.Put || f.type === FrameType.RawWrite) {
      // Skip the payload (and a striped part's extension).
      const extra = (f.type === FrameType.Put && f.parts >= 2 ? PART_EXT_BYTES : 0) + Number(f.len);
      if (buf.length - at < HEADER_BYTES + extra) break;
      size += extra;
    }
    frames.push(f);
    at += size;
  }
  return { frames, rest: buf.length - at };
}

/** 'tcp://HOST:PORT' -> { host, port }. */
export function splitAddress(address: string): { host: string; port: number } {
  const m = /^tcp:\/\/(.+):(\d+)$/.exec(address);
  if (!m) throw new Error(`not a tcp address: ${address}`);
  return { host: m[1], port: Number(m[2]) };
}

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
