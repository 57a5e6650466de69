// Rendezvous keys in TensorFlow's format:
//   src_device;src_incarnation(hex);dst_device;tensor_name;frame_id:iter_id
// The incarnation is written as TensorFlow's CreateKey writes it (strings::FpToString): 16
// lowercase hex digits, zero-padded, so a bigint and a hex string of one incarnation make one key.
import { invalid } from '../base/validate';

export interface ParsedKey {
  srcDevice: string;
  /** Incarnation of the sending endpoint: 16 lowercase hex digits. */
  srcIncarnation: string;
  dstDevice: string;
  name: string;
  frameId: number;
  iterId: number;
  /** The task part of each device ('/job:worker/replica:0/task:1'): what a node's label names. */
  srcTask: string;
  dstTask: string;
}

export interface FrameIter {
  frameId: number;
  iterId: number;
}

const DEVICE = /^\/job:[^/;]+\/replica:\d+\/task:\d+(\/(device:)?[A-Za-z_]+:\d+)?$/;

/** The task a device belongs to: its '/job:J/replica:R/task:T' prefix. */
export function taskOf(device: string): string {
  const m = /^\/job:[^/;]+\/replica:\d+\/task:\d+/.exec(device);
  return m ? m[0] : device;
}

export function createKey(
  srcDevice: string,
  srcIncarnation: bigint | string,
  dstDevice: string,
  name: string,
  frameIter: FrameIter = { frameId: 0, iterId: 0 },
): string {
  const call = 'createKey';
  checkDevice(call, 'srcDevice', srcDevice);
  checkDevice(call, 'dstDevice', dstDevice);
  const incarnation = normalIncarnation(srcIncarnation);
  if (incarnation === undefined) {
    throw invalid(call, 'srcIncarnation must be a bigint in [0, 2^64) or a string of 1 to 16 hex digits');
  }
  if (typeof name !== 'string' || !name || name.includes(';')) {
    throw invalid(call, 'name must be a non-empty string without ";"');
  }
  const { frameId, iterId } = (frameIter ?? {}) as Partial<FrameIter>;
  if (!Number.isSafeInteger(frameId) || !Number.isSafeInteger(iterId) || frameId! < 0 || iterId! < 0) {
    throw invalid(call, 'frameIter must hold non-negative integers frameId and iterId');
  }
  return `${srcDevice};${incarnation};${dstDevice};${name};${frameId}:${iterId}`;
}

export function parseKey(key: string): ParsedKey {
  const call = 'parseKey';
  if (typeof key !== 'string') throw invalid(call, 'key must be a string');
  const parts = key.split(';');
  if (parts.length !== 5) throw invalid(call, `key must have 5 parts separated by ";", got ${parts.length}: "${key}"`);
  const [srcDevice, srcIncarnation, dstDevice, name, frameIter] = parts;
  checkDevice(call, 'src_device', srcDevice);
  const incarnation = normalIncarnation(srcIncarnation);
  if (incarnation === undefined) throw invalid(call, `src_incarnation must be 1 to 16 hex digits, got "${srcIncarnation}"`);
  checkDevice(call, 'dst_device', dstDevice);
  if (!name) throw invalid(call, 'tensor_name is empty');
  const m = /^(\d+):(\d+)$/.exec(frameIter);
  // Digits alone could be beyond 2^53: createKey could not make such a key again.
  if (!m || !Number.isSafeInteger(Number(m[1])) || !Number.isSafeInteger(Number(m[2]))) {
    throw invalid(call, `frame_id:iter_id must be two integers below 2^53, got "${frameIter}"`);
  }
  return {
    srcDevice,
    srcIncarnation: incarnation,
    dstDevice,
    name,
    frameId: Number(m[1]),
    iterId: Number(m[2]),
    srcTask: taskOf(srcDevice),
    dstTask: taskOf(dstDevice),
  };
}

/** Keys parsed recently, kept: a step's keys come again every step, and parsing cost 3-4 µs a time. */
const PARSED_KEPT = 4096;
/** Longer keys are parsed every time: what a peer's requests can make us keep stays small. */
const KEPT_KEY_CHARS = 512;
const parsedKeys = new Map<string, NormalKey>();

/** A key parsed, and written as createKey writes it (one key for every spelling of its incarnation). */
export interface NormalKey {
  readonly parsed: Readonly<ParsedKey>;
  readonly key: string;
}

/** parseKey and keyOf, remembered for the last PARSED_KEPT keys (the result is shared: read only). */
export function normalKey(key: string): NormalKey {
  let known = parsedKeys.get(key);
  if (known === undefined) {
    const parsed = parseKey(key);
    known = { parsed, key: keyOf(parsed) };
    if (key.length > KEPT_KEY_CHARS) return known;
    if (parsedKeys.size >= PARSED_KEPT) parsedKeys.delete(parsedKeys.keys().next().value!);
    parsedKeys.set(key, known);
  }
  return known;
}

/** 16 lowercase hex digits of a u64 incarnation, from a bigint or a hex string; undefined if neither. */
export function normalIncarnation(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value >= 0n && value < 1n << 64n ? value.toString(16).padStart(16, '0') : undefined;
  if (typeof value !== 'string' || !/^[0-9a-fA-F]{1,16}$/.test(value)) return undefined;
  return value.toLowerCase().padStart(16, '0');
}

/** The key of a parsed key as createKey writes it, whatever form its incarnation was given in. */
export function keyOf(p: ParsedKey): string {
  return `${p.srcDevice};${p.srcIncarnation};${p.dstDevice};${p.name};${p.frameId}:${p.iterId}`;
}

function checkDevice(call: string, part: string, device: string): void {
  if (typeof device !== 'string' || !DEVICE.test(device)) {
    throw invalid(call, `${part} must be a device name like /job:worker/replica:0/task:1/device:CPU:0, got "${device}"`);
  }
}
