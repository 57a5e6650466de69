// `rvma perf`'s control messages: JSON records put into each side's control mailbox. The client
// asks the server to get a test ready (a mailbox, or a region for raw writes), runs it, and asks
// what the server received; the server answers into the client's control mailbox, over the
// connection the client opened.

/** Where each side's control mailbox sits. */
export const CONTROL_VADDR = 0x7e57_0000n;
/** The server's data mailboxes from here on, one per test; the client's echo mailbox below it. */
export const DATA_VADDR = 0x7e58_0000n;
export const ECHO_VADDR = 0x7e57_8000n;
/** The largest control record. */
export const CONTROL_BYTES = 4096;

/** lat: one put in flight, echoed back; bw: `window` puts in flight; rate: counted puts; raw: raw writes. */
export type PerfTest = 'lat' | 'bw' | 'rate' | 'raw';
export const PERF_TESTS: readonly PerfTest[] = ['lat', 'bw', 'rate', 'raw'];

export interface PrepareRequest {
  op: 'prepare';
  test: PerfTest;
  size: number;
  /** Every put the test makes, warm-up included. */
  count: number;
  window: number;
}

/** finish: the test is over; `expected` puts (or raw writes) were answered at the client. */
export type ClientMessage = { op: 'hello' } | PrepareRequest | { op: 'finish'; expected: number } | { op: 'bye' };

export type ServerMessage =
  | { op: 'hello'; nodeId: string; provider: string; pid: number; host: string }
  /** vaddr: the test's mailbox; key: its region (raw). */
  | { op: 'ready'; vaddr: string; key?: string }
  /** What arrived: puts (or raw writes) and bytes. */
  | { op: 'done'; count: number; bytes: number }
  | { op: 'error'; message: string };

export function encode(message: ClientMessage | ServerMessage): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(message));
}

/** A control record; undefined for bytes that are not one (a peer's bytes are untrusted). */
export function decode<T extends { op: string }>(bytes: Uint8Array): T | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    return typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string' ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}
