// Typed errors: every refusal, timeout and abort surfaces as RvmaError with a string code.

export type RvmaErrorCode =
  | 'ERR_RVMA_NO_MAILBOX'
  | 'ERR_RVMA_NO_BUFFER'
  | 'ERR_RVMA_OUT_OF_BOUNDS'
  | 'ERR_RVMA_TOO_LARGE'
  | 'ERR_RVMA_CLOSED'
  | 'ERR_RVMA_TIMEOUT'
  | 'ERR_RVMA_ABORTED'
  | 'ERR_RVMA_INVALID_ARGUMENT'
  | 'ERR_RVMA_MAILBOX_EXISTS'
  | 'ERR_RVMA_TOO_MANY_BUFFERS'
  | 'ERR_RVMA_NO_PEER'
  | 'ERR_RVMA_PEER_LOST'
  | 'ERR_RVMA_REGISTRATION'
  | 'ERR_RVMA_AMBIGUOUS'
  | 'ERR_RVMA_NATIVE_UNAVAILABLE'
  | 'ERR_RVMA_DIRECTORY_UNAVAILABLE'
  | 'ERR_RVMA_DIRECTORY_CONFLICT'
  | 'ERR_RVMA_NOT_REGISTERED'
  | 'ERR_RVMA_NO_NAME'
  | 'ERR_RVMA_OVERFLOW'
  | 'ERR_RVMA_PROTOCOL'
  | 'ERR_RVMA_CHECKSUM'
  | 'ERR_RVMA_AUTH'
  | 'ERR_RVMA_FORBIDDEN'
  | 'ERR_RVMA_ADDRESS_IN_USE'
  | 'ERR_RVMA_OUT_OF_MEMORY';

export class RvmaError extends Error {
  readonly code: RvmaErrorCode;
  constructor(code: RvmaErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RvmaError';
    this.code = code;
  }
}

/** Native status numbers (native/core/status.h) to codes. */
const STATUS_CODES: Record<number, RvmaErrorCode> = {
  1: 'ERR_RVMA_NO_MAILBOX',
  2: 'ERR_RVMA_NO_BUFFER',
  3: 'ERR_RVMA_OUT_OF_BOUNDS',
  4: 'ERR_RVMA_TOO_LARGE',
  5: 'ERR_RVMA_CLOSED',
  6: 'ERR_RVMA_INVALID_ARGUMENT',
  7: 'ERR_RVMA_MAILBOX_EXISTS',
  8: 'ERR_RVMA_TOO_MANY_BUFFERS',
  9: 'ERR_RVMA_NO_PEER',
  10: 'ERR_RVMA_PEER_LOST',
  11: 'ERR_RVMA_REGISTRATION',
  12: 'ERR_RVMA_AMBIGUOUS',
  13: 'ERR_RVMA_FORBIDDEN',
  14: 'ERR_RVMA_AUTH',
  15: 'ERR_RVMA_ADDRESS_IN_USE',
  16: 'ERR_RVMA_OUT_OF_MEMORY',
};

export function isRvmaErrorCode(value: string): value is RvmaErrorCode {
  return Object.prototype.hasOwnProperty.call(EXPLAIN, value);
}

export function codeOfStatus(status: number): RvmaErrorCode {
  return STATUS_CODES[status] ?? 'ERR_RVMA_INVALID_ARGUMENT';
}

export function hex(vaddr: bigint): string {
  return `0x${vaddr.toString(16)}`;
}

/** What a put or an operation on a mailbox was doing, for the error message. */
export interface StatusContext {
  op: string;
  vaddr: bigint;
  node?: string;
  bytes?: number;
  /** What the transport said beyond the status (why no connection could be made). */
  reason?: string;
}

/** A node id neither a connection nor the directory knows: most often a directory of this process alone. */
function unknownNode(node: string | undefined): string {
  return (
    `no provider reaches node "${node}": neither a connection nor the endpoint's directory knows it. The default ` +
    'directory (MemoryDirectory) knows only the endpoints of this process; across processes give every endpoint a ' +
    'shared one (RedisDirectory), or put to an address (tcp://HOST:PORT, shm://NAME) or connect() to it first'
  );
}

const EXPLAIN: Record<RvmaErrorCode, (c: StatusContext) => string> = {
  ERR_RVMA_NO_MAILBOX: (c) =>
    c.op === 'Endpoint.rawWrite'
      ? `no region is registered under key ${hex(c.vaddr)}${c.node ? ` on node "${c.node}"` : ''}`
      : `no mailbox is open at vaddr ${hex(c.vaddr)}${c.node ? ` on node "${c.node}"` : ''}`,
  ERR_RVMA_NO_BUFFER: (c) =>
    `mailbox ${hex(c.vaddr)}${c.node ? ` on node "${c.node}"` : ''} has no free buffer: none is posted, or every ` +
    'buffer posted is full or held by puts in flight (the receiver posts more; a put may retry: PutOptions.noBufferRetryMs)',
  ERR_RVMA_OUT_OF_BOUNDS: (c) =>
    `${c.bytes ?? 0} bytes at that offset would end past the current buffer of mailbox ${hex(c.vaddr)}`,
  ERR_RVMA_TOO_LARGE: (c) => `${c.bytes ?? 0} bytes is larger than the current buffer of mailbox ${hex(c.vaddr)}`,
  ERR_RVMA_CLOSED: (c) => `mailbox ${hex(c.vaddr)} or its endpoint is closed`,
  ERR_RVMA_TIMEOUT: () => 'timed out',
  ERR_RVMA_ABORTED: () => 'aborted',
  ERR_RVMA_INVALID_ARGUMENT: (c) => `the core refused the arguments for mailbox ${hex(c.vaddr)}`,
  ERR_RVMA_MAILBOX_EXISTS: (c) => `a mailbox is already open at vaddr ${hex(c.vaddr)}`,
  ERR_RVMA_TOO_MANY_BUFFERS: (c) => `mailbox ${hex(c.vaddr)} already holds its maximum number of posted buffers`,
  ERR_RVMA_NO_PEER: (c) => (c.reason ? `cannot reach "${c.node}"` : c.node?.includes('://') ? `no provider reaches node "${c.node}"` : unknownNode(c.node)),
  ERR_RVMA_PEER_LOST: (c) => `node "${c.node}" went away before acknowledging the put to ${hex(c.vaddr)} (it may or may not have been placed)`,
  ERR_RVMA_REGISTRATION: (c) =>
    `${c.bytes ?? 0} bytes (or the connection's buffers) could not be registered for RDMA, on this node or on node ` +
    `"${c.node}": the locked-memory limit is too low. Raise it for the process that failed: ulimit -l (unlimited, ` +
    'or enough for every buffer in flight), memlock in /etc/security/limits.conf, or LimitMEMLOCK= in its systemd unit',
  ERR_RVMA_AMBIGUOUS: (c) =>
    `node "${c.node}" could not tell whether the put to ${hex(c.vaddr)}, sent again after a broken connection, ` +
    'had already been placed, and refused it rather than place it twice (it may or may not have been placed)',
  ERR_RVMA_NATIVE_UNAVAILABLE: () => 'the native addon is unavailable',
  ERR_RVMA_DIRECTORY_UNAVAILABLE: () => 'the directory is unreachable',
  ERR_RVMA_DIRECTORY_CONFLICT: () => 'another incarnation owns that record',
  ERR_RVMA_NOT_REGISTERED: () => 'the node is not registered',
  ERR_RVMA_NO_NAME: () => 'no such name is bound',
  ERR_RVMA_OVERFLOW: () => 'too many unconsumed events',
  ERR_RVMA_PROTOCOL: () => 'a peer broke the protocol',
  ERR_RVMA_CHECKSUM: () => 'content does not match its checksum',
  ERR_RVMA_ADDRESS_IN_USE: () => 'the listen address is taken (EADDRINUSE)',
  ERR_RVMA_OUT_OF_MEMORY: () => 'out of memory',
  ERR_RVMA_AUTH: (c) =>
    c.node ? `node "${c.node}" and this endpoint could not authenticate each other` : 'authentication failed',
  ERR_RVMA_FORBIDDEN: (c) =>
    c.op === 'Endpoint.rawWrite'
      ? `region ${hex(c.vaddr)}${c.node ? ` on node "${c.node}"` : ''} does not accept raw writes from this node`
      : `mailbox ${hex(c.vaddr)}${c.node ? ` on node "${c.node}"` : ''} does not accept puts from this node`,
};

export function statusError(status: number, context: StatusContext): RvmaError {
  const code = codeOfStatus(status);
  const reason = context.reason ? ` (${context.reason})` : '';
  return new RvmaError(code, `${context.op}: ${EXPLAIN[code](context)}${reason}`);
}

/**
 * What a native call threw, as callers see it: a failure with a status (an Error carrying
 * rvmaStatus, which only a constructor throws: every other native call returns its status) is the
 * RvmaError of that status with the native message; anything else (a TypeError for arguments
 * this package got wrong) as it is.
 */
export function nativeFailure(error: unknown, op: string): unknown {
  const status = (error as { rvmaStatus?: unknown } | null)?.rvmaStatus;
  return typeof status === 'number' ? new RvmaError(codeOfStatus(status), `${op}: ${(error as Error).message}`) : error;
}
