// The options of an endpoint's calls that name memory and mailboxes: openMailbox,
// registerRegion and put (counted or not), with their parsers. The endpoint's own options are in
// endpoint-options.ts.
import type { EpochType } from './mailbox';
import { PutCounter } from './put-counter';
import { checkBoolean, checkInteger, checkOptions, checkU64, invalid } from '../base/validate';
import { checkWaitOptions } from '../base/wait';

const MAX_MS = 2 ** 31 - 1;

export interface MailboxOptions {
  /** What the counter counts: bytes placed (default) or puts placed. */
  epoch?: EpochType;
  /** Count that ends an epoch. Default: the buffer's size ('bytes') or 1 ('ops'). */
  threshold?: number | bigint;
  /** Most buffers posted at once. Default 16. */
  maxBuffers?: number;
  /**
   * The node ids whose puts the mailbox accepts; others are refused with ERR_RVMA_FORBIDDEN
   * before a byte is placed. Default: every node. A peer's node id is the one its connection
   * was set up with: with `auth`, the one its proof covers; without, what it claims (docs/security.md).
   */
  allow?: string[];
  /**
   * Each completion names its `sender`: the node of the last put admitted into the retired
   * buffer (for 'ops' epochs of threshold 1, the one put's node). Default false.
   */
  reportSender?: boolean;
}

/** registerRegion's options. */
export interface RegionOptions {
  /** The node ids whose raw writes the region accepts (as MailboxOptions.allow). Default: every node. */
  allow?: string[];
}

export interface PutOptions {
  /** Byte offset in the receiver's current buffer. Default 0. Exclusive with append. */
  offset?: number | bigint;
  /** Let the receiver place the bytes after what earlier appends placed. */
  append?: boolean;
  /**
   * Keep retrying, with backoff, a put the receiver refused for lack of a posted buffer
   * (ERR_RVMA_NO_BUFFER) for up to this many milliseconds. Default 0: no retry.
   */
  noBufferRetryMs?: number;
  /**
   * Nothing waits on this put soon: the receiver may hold its acknowledgement back (as
   * CountedPutOptions.lazyAck says), so the promise may resolve up to 2 ms later than it would
   * (`'late'`: up to 1 s later). A refusal still comes at once.
   */
  lazyAck?: boolean | 'late';
  timeout?: number;
  signal?: AbortSignal;
}

/** A counted put's options (see PutCounter): no timeout or signal, the counter is waited on instead. */
export interface CountedPutOptions {
  counter: PutCounter;
  offset?: number | bigint;
  append?: boolean;
  /** Copy the data now whatever its size: the memory may change as soon as put() returns. */
  copy?: boolean;
  /**
   * Nothing waits on this put's outcome soon: the receiver may hold its acknowledgement back
   * (up to 2 ms, or until 32 such puts or 1 MiB wait) and send it with later ones, which saves a
   * message and a wake-up per put on tcp and shm. A counter level that covers the put may be
   * reached that much later; failures are reported as soon as they are known.
   *
   * `'late'`: nothing waits on the outcome at all, only a failure would matter (a stream whose
   * receiver paces the sender by other means, as the ring's credits do). The acknowledgement
   * goes with other traffic to the sender, once 256 such puts or 1 MiB wait, or up to 1 s
   * later: it does not wake a sender that sleeps between puts. Failures still come at once.
   */
  lazyAck?: boolean | 'late';
}

/** When a put's acknowledgement goes back (native AckPace): at once, lazily, or late. */
export const AckPace = { Eager: 0, Lazy: 1, Late: 2 } as const;
export type AckPace = (typeof AckPace)[keyof typeof AckPace];

/** A counted put's options, checked. */
export interface CountedPut {
  counter: PutCounter;
  offset: bigint;
  append: boolean;
  copy: boolean;
  ack: AckPace;
}

/** A put's options, checked, with offset and append resolved. */
export type ParsedPutOptions = Omit<PutOptions, 'lazyAck'> & { offset: bigint; append: boolean; ack: AckPace };

// Shared by puts without options; the same shape as what parsePutOptions builds (not frozen,
// which would give it a map of its own).
const NO_PUT_OPTIONS: Readonly<ParsedPutOptions> = {
  offset: 0n,
  append: false,
  timeout: undefined,
  signal: undefined,
  noBufferRetryMs: undefined,
  ack: AckPace.Eager,
};

/** Checks a put's options; the result always has one shape (fast property reads later). */
export function parsePutOptions(call: string, options: unknown): ParsedPutOptions {
  if (options === undefined) return NO_PUT_OPTIONS;
  const o = checkOptions<PutOptions>(call, options, ['offset', 'append', 'timeout', 'signal', 'noBufferRetryMs', 'lazyAck']);
  if (o.noBufferRetryMs !== undefined) checkInteger(call, 'noBufferRetryMs', o.noBufferRetryMs, 0, MAX_MS);
  const ack = parseAckPace(call, o.lazyAck);
  const append = o.append === undefined ? false : checkBoolean(call, 'append', o.append);
  if (append && o.offset !== undefined) throw invalid(call, 'give either offset or append, not both');
  const offset = o.offset === undefined || o.offset === 0 ? 0n : checkU64(call, 'offset', o.offset);
  checkWaitOptions(call, o.timeout, o.signal);
  return { offset, append, timeout: o.timeout, signal: o.signal, noBufferRetryMs: o.noBufferRetryMs, ack };
}

/** Checks a counted put's options (keys: what the call takes). */
export function parseCountedPutOptions(
  call: string,
  options: unknown,
  keys: (keyof CountedPutOptions)[] = ['counter', 'offset', 'append', 'copy', 'lazyAck'],
): CountedPut {
  const o = checkOptions<CountedPutOptions>(call, options, keys);
  if (!(o.counter instanceof PutCounter)) throw invalid(call, 'counter must be a PutCounter (endpoint.createPutCounter())');
  const append = o.append === undefined ? false : checkBoolean(call, 'append', o.append);
  if (append && o.offset !== undefined) throw invalid(call, 'give either offset or append, not both');
  const offset = o.offset === undefined || o.offset === 0 ? 0n : checkU64(call, 'offset', o.offset);
  const copy = o.copy === undefined ? false : checkBoolean(call, 'copy', o.copy);
  return { counter: o.counter, offset, append, copy, ack: parseAckPace(call, o.lazyAck) };
}

function parseAckPace(call: string, lazyAck: unknown): AckPace {
  if (lazyAck === undefined) return AckPace.Eager;
  if (lazyAck === 'late') return AckPace.Late;
  if (typeof lazyAck !== 'boolean') throw invalid(call, `lazyAck must be a boolean or 'late', got ${JSON.stringify(lazyAck)}`);
  return lazyAck ? AckPace.Lazy : AckPace.Eager;
}
