// Every dtype crosses a rendezvous between two endpoints bit for bit: half floats as raw
// 16-bit words (NaN payloads included), 64-bit integers as BigInt arrays at their limits,
// strings with unicode and empty elements. Also the foreign tensor shapes, and bad tensors.
import { type DType, type Rendezvous, type Tensor } from '../../src';
import { expectThrows } from '../helpers/errors';
import { IN_PROCESS_PROVIDERS, bytesOf, trackRendezvous } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const INVALID = 'ERR_RVMA_INVALID_ARGUMENT';

/** Bit patterns a lossy conversion would change: NaNs with payloads, -0, infinities, subnormals. */
function cases(): [string, Tensor, string][] {
  const f32 = new Uint32Array([0x7fc00001, 0xffc00000, 0x80000000, 0x7f800000, 0xff800000, 0x00000001, 0x3f800000, 0x12345678]);
  const f64 = new BigUint64Array([0x7ff8000000000001n, 0x8000000000000000n, 0x7ff0000000000000n, 0x0000000000000001n, 0x400921fb54442d18n, 0xfff0000000000000n]);
  return [
    ['float16', { dtype: 'float16', shape: [2, 4], data: new Uint16Array([0x7e01, 0xfc00, 0x8000, 0x0001, 0x3c00, 0x7bff, 0xffff, 0x0000]) }, 'Uint16Array'],
    ['bfloat16', { dtype: 'bfloat16', shape: [3], data: new Uint16Array([0x7fc1, 0xff80, 0x3f80]) }, 'Uint16Array'],
    ['float32', { dtype: 'float32', shape: [2, 2, 2], data: new Float32Array(f32.buffer) }, 'Float32Array'],
    ['float64', { dtype: 'float64', shape: [6], data: new Float64Array(f64.buffer) }, 'Float64Array'],
    ['int8', { dtype: 'int8', shape: [5], data: new Int8Array([-128, -1, 0, 1, 127]) }, 'Int8Array'],
    ['int16', { dtype: 'int16', shape: [5], data: new Int16Array([-32768, -1, 0, 1, 32767]) }, 'Int16Array'],
    ['int32', { dtype: 'int32', shape: [5], data: new Int32Array([-(2 ** 31), -1, 0, 1, 2 ** 31 - 1]) }, 'Int32Array'],
    ['int64', { dtype: 'int64', shape: [5], data: new BigInt64Array([-(1n << 63n), -1n, 0n, 1n, (1n << 63n) - 1n]) }, 'BigInt64Array'],
    ['uint8', { dtype: 'uint8', shape: [4], data: new Uint8Array([0, 1, 128, 255]) }, 'Uint8Array'],
    ['uint16', { dtype: 'uint16', shape: [4], data: new Uint16Array([0, 1, 0x8000, 0xffff]) }, 'Uint16Array'],
    ['uint32', { dtype: 'uint32', shape: [4], data: new Uint32Array([0, 1, 0x80000000, 0xffffffff]) }, 'Uint32Array'],
    ['uint64', { dtype: 'uint64', shape: [4], data: new BigUint64Array([0n, 1n, 1n << 63n, (1n << 64n) - 1n]) }, 'BigUint64Array'],
    ['bool', { dtype: 'bool', shape: [2, 3], data: new Uint8Array([1, 0, 0, 1, 1, 0]) }, 'Uint8Array'],
    ['float32 scalar', { dtype: 'float32', shape: [], data: new Float32Array([-2.5]) }, 'Float32Array'],
  ];
}

const STRINGS = ['', 'ascii', 'héllo wörld', '日本語のテキスト', '🎉👩‍💻', '', 'x'.repeat(5000), 'tab\tnew\nline', 'nul\u0000byte', 'Ω'];

describe.each(IN_PROCESS_PROVIDERS)('dtypes through a rendezvous (provider %s)', (provider) => {
  /** Sends under key then receives it on the other side, in one step. */
  async function roundTrip(rv: { send: Rendezvous; recv: Rendezvous }, key: string, value: unknown) {
    const received = rv.recv.recv(key, { timeout: 10_000 });
    rv.send.send(key, value);
    return received;
  }

  test('every numeric dtype arrives bit for bit, viewed as its TypedArray', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const rv = { send: sender.mgr.find(1), recv: receiver.mgr.find(1) };
    const all = cases();
    const results = await Promise.all(all.map(([name, t]) => roundTrip(rv, key(name), t)));
    all.forEach(([name, sent, arrayType], i) => {
      const { tensor, isDead } = results[i];
      expect({ name, isDead, dtype: tensor.dtype, shape: tensor.shape, type: tensor.data.constructor.name }).toEqual({
        name,
        isDead: false,
        dtype: sent.dtype,
        shape: sent.shape,
        type: arrayType,
      });
      expect(bytesOf(tensor).toString('hex')).toBe(bytesOf(sent).toString('hex'));
    });
    // 64-bit integers come back as exact BigInts.
    expect([...(results[7].tensor.data as BigInt64Array)]).toEqual([-(1n << 63n), -1n, 0n, 1n, (1n << 63n) - 1n]);
    expect([...(results[11].tensor.data as BigUint64Array)]).toEqual([0n, 1n, 1n << 63n, (1n << 64n) - 1n]);
  });

  test('string tensors: unicode, empty strings, long strings, NULs', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const rv = { send: sender.mgr.find(1), recv: receiver.mgr.find(1) };
    const { tensor } = await roundTrip(rv, key('strings'), { dtype: 'string', shape: [2, 5], data: STRINGS });
    expect(tensor).toEqual({ dtype: 'string', shape: [2, 5], data: STRINGS });
    // Only empty strings: content is just the length words.
    const empties = await roundTrip(rv, key('empties'), { dtype: 'string', shape: [3], data: ['', '', ''] });
    expect(empties.tensor.data).toEqual(['', '', '']);
    // One string, next step, different length: re-requested, decoded again.
    const next = { send: sender.mgr.find(2), recv: receiver.mgr.find(2) };
    const again = await roundTrip(next, key('strings'), { dtype: 'string', shape: [1], data: ['ünïcödé'] });
    expect(again.tensor).toEqual({ dtype: 'string', shape: [1], data: ['ünïcödé'] });
  });

  test('tfjs-like and onnxruntime-like tensors are accepted and arrive as plain tensors', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const rv = { send: sender.mgr.find(1), recv: receiver.mgr.find(1) };
    const tfjs = { dtype: 'int32', shape: [2, 2], dataSync: () => new Int32Array([1, -2, 3, -4]) };
    const ort = { type: 'float16', dims: [3], data: new Uint16Array([0x3c00, 0x7e00, 0x0400]), size: 3 };
    const ortStrings = { type: 'string', dims: [2], data: ['onnx', ''] };
    const [a, b, c] = await Promise.all([roundTrip(rv, key('tfjs'), tfjs), roundTrip(rv, key('ort'), ort), roundTrip(rv, key('ort-s'), ortStrings)]);
    expect(a.tensor.dtype).toBe('int32');
    expect(a.tensor.shape).toEqual([2, 2]);
    expect([...(a.tensor.data as Int32Array)]).toEqual([1, -2, 3, -4]);
    expect(b.tensor.dtype).toBe('float16');
    expect([...(b.tensor.data as Uint16Array)]).toEqual([0x3c00, 0x7e00, 0x0400]);
    expect(c.tensor).toEqual({ dtype: 'string', shape: [2], data: ['onnx', ''] });
  });

  test('a tensor whose data is a view into a larger buffer sends only its own bytes', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const rv = { send: sender.mgr.find(1), recv: receiver.mgr.find(1) };
    const backing = new Float64Array([9, 9, 1, 2, 3, 9]);
    const view = backing.subarray(2, 5);
    const { tensor } = await roundTrip(rv, key('view'), { dtype: 'float64', shape: [3], data: view });
    expect([...(tensor.data as Float64Array)]).toEqual([1, 2, 3]);
  });

  test('bad tensors are refused by send with ERR_RVMA_INVALID_ARGUMENT, and the key stays free', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const rv = sender.mgr.find(1);
    const k = key('bad');
    const bad: [unknown, RegExp][] = [
      [{ dtype: 'float32', shape: [2, 3], data: new Float32Array(5) }, /holds 20 bytes.*needs 24/],
      [{ dtype: 'complex64', shape: [1], data: new Float32Array(2) }, /dtype "complex64"/],
      [{ dtype: 'float32', shape: [-1], data: new Float32Array(1) }, /shape/],
      [{ dtype: 'float32', shape: [2.5], data: new Float32Array(2) }, /shape/],
      [{ dtype: 'string', shape: [2], data: ['only one'] }, /string\[\] of 2/],
      [{ type: 'int64', dims: [2], data: new BigInt64Array(1) }, /holds 8 bytes.*needs 16/],
      [{ dtype: 'int32', shape: [2], dataSync: () => [1, 2] }, /TypedArray/],
    ];
    for (const [value, message] of bad) expectThrows(() => rv.send(k, value as never), INVALID, new RegExp(`^Rendezvous\\.send: .*${message.source}`));
    // Refused sends parked nothing: a good tensor under the same key still goes through.
    const received = receiver.mgr.find(1).recv(k, { timeout: 10_000 });
    rv.send(k, { dtype: 'uint8', shape: [1], data: new Uint8Array([42]) });
    expect([...((await received).tensor.data as Uint8Array)]).toEqual([42]);
  });
});

test('a dtype table entry exists for every dtype the round trip covers', () => {
  const covered = new Set<DType>([...cases().map(([, t]) => t.dtype), 'string']);
  expect(covered.size).toBe(14);
});
