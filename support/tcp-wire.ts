// Just enough of the tcp provider's wire format (docs/protocol.md), written independently of
// native/wire, for the proxy (which rewrites the listen address in a hello) and for hostile raw
// clients. Little-endian throughout.
//   hello:  u32 magic | u16 version | u16 nodeIdLen | u64 incarnation | u16 addressLen |
//           u16 flags | 12 zero bytes | 32-byte nonce | nodeId | address
//   frame header: u8 type | u8 flags | u16 status | u32 parts | u64 id | u64 vaddr | u64 offset | u64 len
import { randomBytes } from 'node:crypto';

export const MAGIC = 0x414d5652;
/** native/wire/frames.h kVersion. */
export const VERSION = 6;
export const HELLO_BYTES = 32;
export const NONCE_BYTES = 32;
export const HEADER_BYTES = 40;

export const FRAME_PUT = 1;
export const FRAME_PING = 4;
export const FRAME_WINDOW = 9;

export function encodeHello(nodeId: string, address = ''): Buffer {
  const id = Buffer.from(nodeId);
  const addr = Buffer.from(address);
  const fixed = Buffer.alloc(HELLO_BYTES);
  fixed.writeUInt32LE(MAGIC, 0);
  fixed.writeUInt16LE(VERSION, 4);
  fixed.writeUInt16LE(id.length, 6);
  fixed.writeBigUInt64LE(randomBytes(8).readBigUInt64LE(0) | 1n, 8);
  fixed.writeUInt16LE(addr.length, 16);
  return Buffer.concat([fixed, randomBytes(NONCE_BYTES), id, addr]);
}

/** Bytes of the whole hello at the start of buf, or undefined while it is incomplete. */
export function helloLength(buf: Buffer): number | undefined {
  if (buf.length < HELLO_BYTES) return undefined;
  const size = HELLO_BYTES + NONCE_BYTES + buf.readUInt16LE(6) + buf.readUInt16LE(16);
  return buf.length < size ? undefined : size;
}

/** The hello at the start of buf (of `size` bytes) with its listen address replaced. */
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
  id?: bigint;
  vaddr?: bigint;
  offset?: bigint;
  len?: bigint;
}

export function encodeHeader(h: Header, out = Buffer.alloc(HEADER_BYTES), at = 0): Buffer {
  out.fill(0, at, at + HEADER_BYTES);
  out[at] = h.type;
  out[at + 1] = h.flags ?? 0;
  out.writeBigUInt64LE(h.id ?? 0n, at + 8);
  out.writeBigUInt64LE(h.vaddr ?? 0n, at + 16);
  out.writeBigUInt64LE(h.offset ?? 0n, at + 24);
  out.writeBigUInt64LE(h.len ?? 0n, at + 32);
  return out;
}

/** 'tcp://HOST:PORT' -> { host, port }. */
export function splitAddress(address: string): { host: string; port: number } {
  const m = /^tcp:\/\/(.+):(\d+)$/.exec(address);
  if (!m) throw new Error(`not a tcp address: ${address}`);
  return { host: m[1], port: Number(m[2]) };
}
