// The net.Socket rate row's wire format: messages are a u32 length (always 8) and the 8-byte
// payload; the receiver answers each chunk it read with one u64: messages received so far.
export const LENGTH_BYTES = 4;
export const FRAME_BYTES = LENGTH_BYTES + 8;
export const ACK_BYTES = 8;
