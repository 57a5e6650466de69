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

/** The ring header of a frame of `length` bytes; throws ERR_RVMA_PROTOCOL for anything malformed. */
export function readFrameHeader(bytes: Uint8Array, length: number): FrameHeader {
  if (length < FRAME_HEADER_BYTES || length > bytes.byteLength) throw protocol(`${length} bytes cannot hold a frame`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, FRAME_HEADER_BYTES);
  if (view.getUint16(0, true) !== MAGIC) throw protocol('bad magic');
  if (view.getUint8(2) !== VERSION) throw protocol(`version ${view.getUint8(2)}, expected ${VERSION}`);
  if (view.getUint8(3) !== 0) throw protocol(`unknown flags ${view.getUint8(3)}`);
  const headerLen = view.getUint32(4, true);
  if (headerLen > length - FRAME_HEADER_BYTES) throw protocol(`a ${headerLen}-byte header in a ${length}-byte frame`);
  const seq = view.getBigUint64(8, true);
  if (seq > BigInt(Number.MAX_SAFE_INTEGER)) throw protocol(`sequence number ${seq} out of range`);
  return { seq: Number(seq), headerLen };
}
