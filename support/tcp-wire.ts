// The tcp provider's wire format (docs/protocol.md), written independently of its native
// decoder (native/providers/tcp/tcp_frames.h): for the tests that speak (and mis-speak) it over
// raw sockets, the proxies (which rewrite the listen address in a hello) and hostile raw clients
// (soak, bench:hostile). Little-endian throughout.
//   hello:  u32 magic | u16 version | u16 nodeIdLen | u64 incarnation | u16 addressLen |
//           u16 flags (1: auth) | 12 zero bytes | 32-byte nonce | nodeId | address
//   then, when both sides authenticate, a 32-byte proof each way before any frame
//   header: u8 type | u8 flags | u16 status | u32 parts | u64 id | u64 vaddr | u64 offset | u64 len
//   a Put with parts >= 2 (one part of a striped put) is followed by u64 putOffset | u64 putLen
//   a Floor carries its floor in id, a Window its window's name
import { randomBytes } from 'node:crypto';

export const MAGIC = 0x414d5652;
export const VERSION = 7; // native/providers/tcp/tcp_frames.h kVersion
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

/** A hello of a new incarnation and a random nonce, as a peer starting up sends it. */
export function freshHello(nodeId: string, address = ''): Buffer {
  return encodeHello({ nodeId, address, incarnation: randomBytes(8).readBigUInt64LE(0) | 1n, nonce: randomBytes(NONCE_BYTES) });
}

/** The hello at the start of buf (of `size` bytes) with its listen address replaced; what follows it is kept. */
export function withAddress(buf: Buffer, size: number, address: string): Buffer {
  const idLen = buf.readUInt16LE(6);
  const idEnd = HELLO_BYTES + NONCE_BYTES + idLen;
  const ours = Buffer.from(address);
  const fixed = Buffer.from(buf.subarray(0, HELLO_BYTES));
  fixed.writeUInt16LE(ours.length, 16);
  return Buffer.concat([fixed, buf.subarray(HELLO_BYTES, idEnd), ours, buf.subarray(size)]);
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

/** Every field written: `out` may be reused. */
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
