// A ring data frame as it lands in the receiver's posted buffer: a 16-byte ring header, the
// sender's header, then its data. The header's sequence number restores send order whatever
// order the transport placed frames in (tcp may rotate puts over connections).
import { RvmaError } from '../mailbox/errors';

export const FRAME_HEADER_BYTES = 16;
const MAGIC = 0x5246; // 'RF'
const VERSION = 1;

export interface FrameHeader {
  /** Per direction, from 0: the order the sender sent it in. */
  seq: number;
  /** Bytes of the sender's header that follow the ring header. */
  headerLen: number;
}

function writeU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = v >>> 24;
}

/** A new head for a frame: the ring header, then a copy of the sender's (small) header. */
export function frameHead(seq: number, header: Uint8Array | undefined): Uint8Array {
  const head = new Uint8Array(FRAME_HEADER_BYTES + (header?.byteLength ?? 0));
  writeFrameHead(head, seq, header);
  return head;
}

/** Writes a frame's head into `head`, which is FRAME_HEADER_BYTES + the header's length long. */
export function writeFrameHead(head: Uint8Array, seq: number, header: Uint8Array | undefined): void {
  const headerLen = header?.byteLength ?? 0;
  head[0] = MAGIC & 0xff;
  head[1] = MAGIC >> 8;
  head[2] = VERSION;
  writeU32(head, 4, headerLen);
  writeU32(head, 8, seq % 2 ** 32);
  writeU32(head, 12, Math.floor(seq / 2 ** 32));
  if (header) head.set(header, FRAME_HEADER_BYTES);
}

function protocol(what: string): RvmaError {
  return new RvmaError('ERR_RVMA_PROTOCOL', `ring frame: ${what}`);
}

const readU32 = (b: Uint8Array, at: number): number => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16)) + b[at + 3] * 2 ** 24;

/** The ring header of a frame of `length` bytes; throws ERR_RVMA_PROTOCOL for anything malformed. */
export function readFrameHeader(bytes: Uint8Array, length: number): FrameHeader {
  // Read byte by byte: a DataView per frame was a measurable share of a forwarder's time.
  if (length < FRAME_HEADER_BYTES || length > bytes.byteLength) throw protocol(`${length} bytes cannot hold a frame`);
  if ((bytes[0] | (bytes[1] << 8)) !== MAGIC) throw protocol('bad magic');
  if (bytes[2] !== VERSION) throw protocol(`version ${bytes[2]}, expected ${VERSION}`);
  if (bytes[3] !== 0) throw protocol(`unknown flags ${bytes[3]}`);
  const headerLen = readU32(bytes, 4);
  if (headerLen > length - FRAME_HEADER_BYTES) throw protocol(`a ${headerLen}-byte header in a ${length}-byte frame`);
  const high = readU32(bytes, 12);
  // Beyond 2^53 a number no longer counts frames exactly.
  if (high >= 2 ** 21) throw protocol(`sequence number ${(BigInt(high) << 32n) + BigInt(readU32(bytes, 8))} out of range`);
  return { seq: high * 2 ** 32 + readU32(bytes, 8), headerLen };
}
