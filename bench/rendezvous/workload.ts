// The tensors a step moves: K float32 tensors of the scenario's size (the same objects every
// step, so their shapes repeat), and the small answer that goes back.
import { type StepScenario } from './config';

export interface FloatTensor {
  dtype: 'float32';
  shape: number[];
  data: Float32Array;
}

function tensor(bytes: number, seed: number): FloatTensor {
  const data = new Float32Array(bytes / 4);
  for (let i = 0; i < data.length; i++) data[i] = seed + i * 0.25;
  return { dtype: 'float32', shape: [data.length], data };
}

const made = new Map<string, FloatTensor[]>();

/** The scenario's K tensors, made once per size and count. */
export function tensorsFor(s: StepScenario): FloatTensor[] {
  const key = `${s.tensors}x${s.size}`;
  let list = made.get(key);
  if (!list) made.set(key, (list = Array.from({ length: s.tensors }, (_, i) => tensor(s.size, i + 1))));
  return list;
}

/** The answer to a step: 2 float32 for the ping-pong, 1 otherwise. */
export function ackTensor(s: StepScenario): FloatTensor {
  return tensor(s.ackBytes, 0.5);
}

/** Bytes of a tensor's data as a put sends them. */
export function bytesOf(t: FloatTensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/** A received tensor is the one sent: its size, first and last values. */
export function checkReceived(got: Float32Array, sent: FloatTensor, what: string): void {
  const n = sent.data.length;
  if (got.length !== n || got[0] !== sent.data[0] || got[n - 1] !== sent.data[n - 1]) {
    throw new Error(`${what}: received ${got.length} float32 (${got[0]}..${got[got.length - 1]}), sent ${n}`);
  }
}
