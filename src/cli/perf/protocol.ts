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

/** The most memory one test may make the server hold, and the most puts and puts in flight. */
export const MAX_TEST_BYTES = 2 ** 30;
export const MAX_COUNT = 1e8;
export const MAX_WINDOW = 4096;

/** Bytes the server holds for a test: its mailbox's buffers, or its region. */
export function serverBytes(r: Pick<PrepareRequest, 'test' | 'size' | 'count' | 'window'>): number {
  if (r.test === 'rate') return r.count * r.size;
  if (r.test === 'raw') return r.window * r.size;
  return (2 * r.window + 2) * r.size;
}

/** Why a prepare request cannot be served (a client's bytes are untrusted), or undefined. */
export function prepareRefusal(r: Record<string, unknown>): string | undefined {
  const int = (v: unknown, min: number, max: number): boolean => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
  if (!(PERF_TESTS as readonly unknown[]).includes(r.test)) return `unknown test ${JSON.stringify(r.test)}`;
  if (!int(r.size, 1, MAX_TEST_BYTES)) return `size must be an integer from 1 to ${MAX_TEST_BYTES}`;
  if (!int(r.count, 1, MAX_COUNT)) return `count must be an integer from 1 to ${MAX_COUNT}`;
  if (!int(r.window, 1, MAX_WINDOW)) return `window must be an integer from 1 to ${MAX_WINDOW}`;
  const bytes = serverBytes(r as unknown as PrepareRequest);
  if (bytes > MAX_TEST_BYTES) return `${r.test} of ${r.size} B puts (${r.count} of them, ${r.window} in flight) needs ${bytes} bytes at the server, more than ${MAX_TEST_BYTES}`;
  return undefined;
}

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
