// Ring.join's options, checked once into a fixed shape with every default in one place.
import { checkOptions, checkInteger, checkString, invalid } from '../base/validate';
import { checkWaitOptions } from '../base/wait';

export interface RingJoinOptions {
  /** The ring's name in the directory: members of one group form one ring. */
  group: string;
  /** The rank to take; default: the lowest free one (in a re-formed generation, the highest). */
  rank?: number;
  /** Ranks in the ring; needed by at least one member of a new group (the others read it). */
  size?: number;
  /** Milliseconds to wait for the ring to complete. Default 30000. */
  timeout?: number;
  signal?: AbortSignal;
  /** Frame buffers posted per direction: the credits a neighbour sends on. Default: about 1 MiB of frames, 16 to 64 (64 for 16 KiB frames, 16 from 64 KiB). */
  slots?: number;
  /** Largest frame (header + data) this member receives. Default 65536. */
  frameBytes?: number;
  /** Largest control record this member receives. Default 16384. */
  controlBytes?: number;
}

export interface RingReformOptions {
  /** Ranks in the new ring; default: the members still alive (newcomers may then not join). */
  size?: number;
  /** Milliseconds to wait for the new ring to complete. Default 30000. */
  timeout?: number;
  signal?: AbortSignal;
}

/** What a ring has moved since it was joined, over all its generations (Ring.stats). */
export interface RingCounts {
  /** Frames handed to the transport (sendNext and sendPrev). */
  framesSent: number;
  /** Frames that arrived (recvPrev and recvNext), taken or not. */
  framesReceived: number;
  /** Credit records sent to the neighbours (one per half window of frames released). */
  creditRecordsSent: number;
  /** Credit records received from the neighbours. */
  creditRecordsReceived: number;
}

export function zeroCounts(): RingCounts {
  return { framesSent: 0, framesReceived: 0, creditRecordsSent: 0, creditRecordsReceived: 0 };
}

export interface RingOptions {
  group: string;
  slots: number;
  frameBytes: number;
  controlBytes: number;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
/** Control buffers posted: credits, around records and failure notices of a few neighbours. */
export const CONTROL_SLOTS = 64;
/**
 * Application records (sendControl, around) received and not yet taken with control() or
 * pollControl(): one more leaves the generation with ERR_RVMA_OVERFLOW instead of memory
 * growing for a member that sends faster than this one reads.
 */
export const CONTROL_WAITING_MAX = 4096;
const MAX_SIZE = 65536;
/**
 * Default slots: deep enough that a pipelined sender rarely waits for credits, and each wake-up
 * of a forwarding rank finds several frames (bench:ring, 16 KiB frames, 3 ranks on one CPU: 16
 * slots moved 0.55-0.71x the frames/s of a net.Socket ring with 64 frames in flight, 64 slots
 * 0.78-0.95x), within about 1 MiB per direction (what 16 slots of the default 64 KiB frames
 * took before), and never fewer than 16.
 */
function defaultSlots(frameBytes: number): number {
  return Math.min(64, Math.max(16, Math.round(2 ** 20 / frameBytes)));
}

export function parseJoinOptions(call: string, options: unknown): { ring: RingOptions; rank?: number; size?: number; timeout: number; signal?: AbortSignal } {
  if (options === undefined) throw invalid(call, 'options with a group are required');
  const o = checkOptions<RingJoinOptions>(call, options, ['group', 'rank', 'size', 'timeout', 'signal', 'slots', 'frameBytes', 'controlBytes']);
  const group = checkString(call, 'group', o.group);
  if (!/^[A-Za-z0-9._:-]{1,200}$/.test(group)) throw invalid(call, `group must be 1 to 200 characters of [A-Za-z0-9._:-], got ${JSON.stringify(group)}`);
  const size = o.size === undefined ? undefined : checkInteger(call, 'size', o.size, 1, MAX_SIZE);
  const rank = o.rank === undefined ? undefined : checkInteger(call, 'rank', o.rank, 0, (size ?? MAX_SIZE) - 1);
  checkWaitOptions(call, o.timeout, o.signal);
  const frameBytes = checkInteger(call, 'frameBytes', o.frameBytes ?? 65536, 1, 2 ** 30);
  return {
    ring: {
      group,
      slots: checkInteger(call, 'slots', o.slots ?? defaultSlots(frameBytes), 1, 4096),
      frameBytes,
      controlBytes: checkInteger(call, 'controlBytes', o.controlBytes ?? 16384, 256, 2 ** 24),
    },
    rank,
    size,
    timeout: o.timeout ?? DEFAULT_TIMEOUT_MS,
    signal: o.signal,
  };
}

export function parseReformOptions(call: string, options: unknown): { size?: number; timeout: number; signal?: AbortSignal } {
  const o = checkOptions<RingReformOptions>(call, options, ['size', 'timeout', 'signal']);
  checkWaitOptions(call, o.timeout, o.signal);
  return {
    size: o.size === undefined ? undefined : checkInteger(call, 'size', o.size, 1, MAX_SIZE),
    timeout: o.timeout ?? DEFAULT_TIMEOUT_MS,
    signal: o.signal,
  };
}
