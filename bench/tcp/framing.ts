// net.Socket framing, shared with bench/c/sockbench.c: u32 length + u32 sequence, ack u32 seq + u32 status.
export const FRAME_HEADER_BYTES = 8;
export const ACK_BYTES = 8;
