// The control messages of the rendezvous protocol, as msgpack records put into a peer's
// control mailbox, and their checks on arrival (a peer's bytes are never trusted).
import { RvmaError } from '../base/errors';
import { type TensorMeta, checkMeta, packValue, unpackValue } from '../tensor/codec';

/** The well-known control mailbox of every rendezvous endpoint (library-reserved range). */
export const CONTROL_VADDR = 0x10n;

export const enum Kind {
  TensorRequest = 1,
  MetaDataResponse = 2,
  TensorReRequest = 3,
  ErrorStatus = 4,
  /** The receiver gave up on a request (timeout, abort): the sender withdraws it. */
  TensorCancel = 5,
  /** The sender will push the key's content into the receiver's push mailbox (see push.ts). */
  PushAccepted = 6,
  /** The sender kept one step's tensor of a pushed key for a request (or stopped pushing the key). */
  NotPushed = 7,
  /** The sender's manager closed: it pushes nothing more to this receiver. */
  PushEnded = 8,
}

/** Every message names its sender's node id and incarnation, for replies and checks. */
interface From {
  from: string;
  fromIncarnation: string;
}

export interface TensorRequest extends From {
  kind: Kind.TensorRequest;
  key: string;
  stepId: string;
  requestIndex: number;
  /** Where the content goes if cachedMeta is still right (0: nothing allocated yet). */
  dataVaddr: bigint;
  cachedMeta: TensorMeta | null;
  /** A mailbox kept posted for later steps' content of this key, sized for cachedMeta (0: none). */
  pushVaddr: bigint;
}

export interface MetaDataResponse extends From {
  kind: Kind.MetaDataResponse;
  requestIndex: number;
  meta: TensorMeta;
  checksum: number | null;
}

export interface TensorReRequest extends From {
  kind: Kind.TensorReRequest;
  requestIndex: number;
  dataVaddr: bigint;
}

export interface ErrorStatus extends From {
  kind: Kind.ErrorStatus;
  requestIndex: number;
  code: string;
  message: string;
}

export interface TensorCancel extends From {
  kind: Kind.TensorCancel;
  requestIndex: number;
}

export interface PushAccepted extends From {
  kind: Kind.PushAccepted;
  key: string;
  pushVaddr: bigint;
}

export interface NotPushed extends From {
  kind: Kind.NotPushed;
  key: string;
  stepId: string;
  /** The sender stopped pushing the key (its meta changed, or the push mailbox is gone). */
  dropped: boolean;
  /** Dropped for another meta: the tensor's, so that the recv's request goes with it. */
  meta?: TensorMeta;
}

export interface PushEnded extends From {
  kind: Kind.PushEnded;
}

export type ControlMessage = TensorRequest | MetaDataResponse | TensorReRequest | ErrorStatus | TensorCancel | PushAccepted | NotPushed | PushEnded;

export function encode(message: ControlMessage): Uint8Array {
  const m = message as unknown as Record<string, unknown>;
  // vaddrs travel as decimal strings: msgpack ints are not 64-bit unsigned everywhere.
  if (!('dataVaddr' in m) && !('pushVaddr' in m)) return packValue(m);
  const wire = { ...m };
  if ('dataVaddr' in m) wire.dataVaddr = String(m.dataVaddr);
  if ('pushVaddr' in m) wire.pushVaddr = String(m.pushVaddr);
  return packValue(wire);
}

export function decode(bytes: Uint8Array): ControlMessage {
  let raw: Record<string, unknown>;
  try {
    raw = unpackValue(bytes) as Record<string, unknown>;
  } catch (cause) {
    throw protocol('undecodable control message', cause);
  }
  if (!raw || typeof raw !== 'object') throw protocol('control message is not a record');
  const str = (k: string) => {
    if (typeof raw[k] !== 'string') throw protocol(`control message field ${k} must be a string`);
    return raw[k] as string;
  };
  const index = () => {
    const v = raw.requestIndex;
    if (!Number.isSafeInteger(v) || (v as number) < 0) throw protocol('control message requestIndex is invalid');
    return v as number;
  };
  /** A u64 in decimal; a re-request names a mailbox, so 0 (no mailbox) is refused there. */
  const vaddr = (min = 0n, field = 'dataVaddr') => {
    const v = str(field);
    if (!/^\d{1,20}$/.test(v) || BigInt(v) >= 1n << 64n || BigInt(v) < min) throw protocol(`control message ${field} is invalid`);
    return BigInt(v);
  };
  const step = () => {
    const v = str('stepId');
    if (!/^\d{1,20}$/.test(v) || BigInt(v) >= 1n << 64n) throw protocol('control message stepId is invalid');
    return v;
  };
  const from = { from: str('from'), fromIncarnation: str('fromIncarnation') };
  switch (raw.kind) {
    case Kind.TensorRequest:
      return {
        kind: Kind.TensorRequest,
        ...from,
        key: str('key'),
        stepId: step(),
        requestIndex: index(),
        dataVaddr: vaddr(),
        cachedMeta: raw.cachedMeta == null ? null : checkMeta(raw.cachedMeta),
        // Absent: the requester offers no push mailbox.
        pushVaddr: raw.pushVaddr === undefined ? 0n : vaddr(0n, 'pushVaddr'),
      };
    case Kind.MetaDataResponse: {
      const requestIndex = index();
      // A bad meta still says which request it answers: that recv fails at once.
      const answering = { from: from.from, requestIndex };
      if (raw.checksum != null && !isCrc32(raw.checksum)) {
        throw new ControlMessageError('meta response checksum is invalid', answering);
      }
      let meta: TensorMeta;
      try {
        meta = checkMeta(raw.meta);
      } catch (cause) {
        throw new ControlMessageError('meta response carries malformed tensor meta', answering, cause);
      }
      return { kind: Kind.MetaDataResponse, ...from, requestIndex, meta, checksum: (raw.checksum as number | null) ?? null };
    }
    case Kind.TensorReRequest:
      return { kind: Kind.TensorReRequest, ...from, requestIndex: index(), dataVaddr: vaddr(1n) };
    case Kind.ErrorStatus:
      return { kind: Kind.ErrorStatus, ...from, requestIndex: index(), code: str('code'), message: str('message') };
    case Kind.TensorCancel:
      return { kind: Kind.TensorCancel, ...from, requestIndex: index() };
    case Kind.PushAccepted:
      return { kind: Kind.PushAccepted, ...from, key: str('key'), pushVaddr: vaddr(1n, 'pushVaddr') };
    case Kind.NotPushed:
      if (typeof raw.dropped !== 'boolean') throw protocol('control message field dropped must be a boolean');
      return {
        kind: Kind.NotPushed,
        ...from,
        key: str('key'),
        stepId: step(),
        dropped: raw.dropped,
        ...(raw.meta == null ? {} : { meta: checkMeta(raw.meta) }),
      };
    case Kind.PushEnded:
      return { kind: Kind.PushEnded, ...from };
    default:
      // Not String(raw.kind): a peer's record may carry a toString that is no function.
      throw protocol(`unknown control message kind ${typeof raw.kind === 'number' ? raw.kind : typeof raw.kind}`);
  }
}

/** A control message that could not be decoded; answering names the request it was for. */
export class ControlMessageError extends RvmaError {
  constructor(
    message: string,
    readonly answering?: { from: string; requestIndex: number },
    cause?: unknown,
  ) {
    super('ERR_RVMA_PROTOCOL', `rendezvous: ${message}`, { cause });
  }
}

/** The receiver compares the checksum with the crc32 it computes: anything else could never match. */
function isCrc32(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
}

function protocol(message: string, cause?: unknown): RvmaError {
  return new ControlMessageError(message, undefined, cause);
}
