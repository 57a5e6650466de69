// A ring data frame as it lands in the receiver's posted buffer: a 16-byte ring header, the
// sender's header, then its data. The header's sequence number restores send order whatever
// order the transport placed frames in (tcp may rotate puts over connections). The receiver
// decodes it natively (native/ring/ring_frame.h).

export const FRAME_HEADER_BYTES = 16;
const MAGIC = 0x5246; // 'RF'
const VERSION = 1;

function writeU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = v >>> 24;
}

/** A frame's head: the ring header, then a copy of the sender's (small) header (the native sender writes its own). */
export function frameHead(seq: number, header: Uint8Array | undefined): Uint8Array {
  const headerLen = header?.byteLength ?? 0;
  const head = new Uint8Array(FRAME_HEADER_BYTES + headerLen);
  head[0] = MAGIC & 0xff;
  head[1] = MAGIC >> 8;
  head[2] = VERSION;
  writeU32(head, 4, headerLen);
  writeU32(head, 8, seq % 2 ** 32);
  writeU32(head, 12, Math.floor(seq / 2 ** 32));
  if (header) head.set(header, FRAME_HEADER_BYTES);
  return head;
}
