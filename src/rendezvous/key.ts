// Rendezvous keys in TensorFlow's format:
//   src_device;src_incarnation(hex);dst_device;tensor_name;frame_id:iter_id
import { invalid } from '../mailbox/validate';

export interface ParsedKey {
  srcDevice: string;
  /** Hex incarnation of the sending endpoint. */
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
  const incarnation = typeof srcIncarnation === 'bigint' && srcIncarnation >= 0n ? srcIncarnation.toString(16) : srcIncarnation;
  if (typeof incarnation !== 'string' || !/^[0-9a-fA-F]+$/.test(incarnation)) {
    throw invalid(call, 'srcIncarnation must be a non-negative bigint or a hex string');
  }
  if (typeof name !== 'string' || !name || name.includes(';')) {
    throw invalid(call, 'name must be a non-empty string without ";"');
  }
  const { frameId, iterId } = (frameIter ?? {}) as Partial<FrameIter>;
  if (!Number.isSafeInteger(frameId) || !Number.isSafeInteger(iterId) || frameId! < 0 || iterId! < 0) {
    throw invalid(call, 'frameIter must hold non-negative integers frameId and iterId');
  }
  return `${srcDevice};${incarnation.toLowerCase()};${dstDevice};${name};${frameId}:${iterId}`;
}

export function parseKey(key: string): ParsedKey {
  const call = 'parseKey';
  if (typeof key !== 'string') throw invalid(call, 'key must be a string');
  const parts = key.split(';');
  if (parts.length !== 5) throw invalid(call, `key must have 5 parts separated by ";", got ${parts.length}: "${key}"`);
  const [srcDevice, srcIncarnation, dstDevice, name, frameIter] = parts;
  checkDevice(call, 'src_device', srcDevice);
  if (!/^[0-9a-fA-F]+$/.test(srcIncarnation)) throw invalid(call, `src_incarnation must be hex, got "${srcIncarnation}"`);
  checkDevice(call, 'dst_device', dstDevice);
  if (!name) throw invalid(call, 'tensor_name is empty');
  const m = /^(\d+):(\d+)$/.exec(frameIter);
  // Digits alone could be beyond 2^53: createKey could not make such a key again.
  if (!m || !Number.isSafeInteger(Number(m[1])) || !Number.isSafeInteger(Number(m[2]))) {
    throw invalid(call, `frame_id:iter_id must be two integers below 2^53, got "${frameIter}"`);
  }
  return {
    srcDevice,
    srcIncarnation: srcIncarnation.toLowerCase(),
    dstDevice,
    name,
    frameId: Number(m[1]),
    iterId: Number(m[2]),
    srcTask: taskOf(srcDevice),
    dstTask: taskOf(dstDevice),
  };
}

function checkDevice(call: string, part: string, device: string): void {
  if (typeof device !== 'string' || !DEVICE.test(device)) {
    throw invalid(call, `${part} must be a device name like /job:worker/replica:0/task:1/device:CPU:0, got "${device}"`);
  }
}
