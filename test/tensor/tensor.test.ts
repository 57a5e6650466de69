// toTensor: the three shapes a caller may hand over ({dtype, shape, data}, onnxruntime-like
// {type, dims, data}, tfjs-like {dtype, shape, dataSync()}) and the refusals of bad tensors.
import { DTYPES, elementCount, elementSize, toTensor } from '../../src';
import { expectThrows } from '../helpers/errors';

const INVALID = 'ERR_RVMA_INVALID_ARGUMENT';
const loose = (value: unknown) => value as never;

describe('dtype table', () => {
  test('every dtype is listed once, with its element size', () => {
    expect([...DTYPES].sort()).toEqual(
      ['bfloat16', 'bool', 'float16', 'float32', 'float64', 'int16', 'int32', 'int64', 'int8', 'string', 'uint16', 'uint32', 'uint64', 'uint8'],
    );
    const sizes = Object.fromEntries(DTYPES.map((d) => [d, elementSize(d)]));
    expect(sizes).toEqual({
      float16: 2, bfloat16: 2, float32: 4, float64: 8, int8: 1, int16: 2, int32: 4, int64: 8,
      uint8: 1, uint16: 2, uint32: 4, uint64: 8, bool: 1, string: 0,
    });
  });

  test('elementCount: the product of the dims, 1 for a scalar, 0 with a zero dim', () => {
    expect(elementCount([2, 3, 4])).toBe(24);
    expect(elementCount([])).toBe(1);
    expect(elementCount([0, 5])).toBe(0);
  });
});

describe('toTensor accepts', () => {
  test('{dtype, shape, data} as is, without copying the data, with a copied shape', () => {
    const data = new Float32Array([1, 2, 3, 4, 5, 6]);
    const shape = [2, 3];
    const t = toTensor('test', { dtype: 'float32', shape, data });
    expect(t.data).toBe(data);
    expect(t.shape).toEqual([2, 3]);
    shape[0] = 99; // the caller's array is not aliased
    expect(t.shape).toEqual([2, 3]);
  });

  test('onnxruntime-like {type, dims, data} (int64 as BigInt64Array)', () => {
    const data = new BigInt64Array([1n, -2n, 3n]);
    const ort = { type: 'int64', dims: [3] as readonly number[], data, size: 3, location: 'cpu' };
    const t = toTensor('test', ort);
    expect(t).toEqual({ dtype: 'int64', shape: [3], data });
    expect(t.data).toBe(data);
  });

  test('onnxruntime-like string and bool tensors', () => {
    expect(toTensor('test', { type: 'string', dims: [2], data: ['a', ''] })).toEqual({ dtype: 'string', shape: [2], data: ['a', ''] });
    const bools = new Uint8Array([1, 0, 1, 1]);
    expect(toTensor('test', { type: 'bool', dims: [2, 2], data: bools }).data).toBe(bools);
  });

  test('tfjs-like {dtype, shape, dataSync()} (plain object)', () => {
    const values = new Int32Array([7, 8, 9, 10]);
    const tfjs = { dtype: 'int32', shape: [2, 2], dataSync: () => values };
    expect(toTensor('test', tfjs)).toEqual({ dtype: 'int32', shape: [2, 2], data: values });
  });

  test('a tfjs Tensor-like class, which also has an async data() method next to dataSync()', () => {
    // tf.Tensor exposes data() (a Promise) and dataSync() on its prototype: the synchronous one must be used.
    class TfTensor {
      readonly size: number;
      constructor(
        readonly dtype: string,
        readonly shape: number[],
        private readonly values: Float32Array,
      ) {
        this.size = values.length;
      }
      async data(): Promise<Float32Array> {
        return this.values;
      }
      dataSync(): Float32Array {
        return this.values;
      }
    }
    const values = new Float32Array([0.5, 1.5]);
    const t = toTensor('test', new TfTensor('float32', [2], values));
    expect(t).toEqual({ dtype: 'float32', shape: [2], data: values });
  });

  test('a scalar (shape []) holds one element', () => {
    expect(toTensor('test', { dtype: 'float64', shape: [], data: new Float64Array([Math.PI]) }).shape).toEqual([]);
  });

  test('zero-size tensors with empty data', () => {
    expect(toTensor('test', { dtype: 'float32', shape: [0, 5], data: new Float32Array(0) }).shape).toEqual([0, 5]);
    expect(toTensor('test', { dtype: 'string', shape: [3, 0], data: [] }).data).toEqual([]);
  });

  test('a Buffer (or any view) whose byte length matches, whatever its element type', () => {
    const buf = Buffer.alloc(12);
    expect(toTensor('test', { dtype: 'float32', shape: [3], data: buf }).data).toBe(buf);
  });
});

describe('toTensor refuses bad tensors with ERR_RVMA_INVALID_ARGUMENT', () => {
  test.each<[string, unknown, RegExp]>([
    ['null', null, /must be an object/],
    ['a number', 3, /must be an object/],
    ['unknown dtype', { dtype: 'complex64', shape: [1], data: new Float32Array(2) }, /dtype "complex64"/],
    ['missing dtype', { shape: [1], data: new Float32Array(1) }, /dtype/],
    ['dtype in the wrong case', { dtype: 'Float32', shape: [1], data: new Float32Array(1) }, /dtype "Float32"/],
    ['negative dim', { dtype: 'float32', shape: [-1], data: new Float32Array(1) }, /shape/],
    ['fractional dim', { dtype: 'float32', shape: [1.5], data: new Float32Array(1) }, /shape/],
    ['NaN dim', { dtype: 'float32', shape: [NaN], data: new Float32Array(1) }, /shape/],
    ['shape not an array', { dtype: 'float32', shape: '2x3', data: new Float32Array(6) }, /shape/],
    ['missing shape', { dtype: 'float32', data: new Float32Array(6) }, /shape/],
    ['too few bytes', { dtype: 'float32', shape: [2, 3], data: new Float32Array(5) }, /holds 20 bytes.*needs 24/],
    ['too many bytes', { dtype: 'int64', shape: [2], data: new BigInt64Array(3) }, /holds 24 bytes.*needs 16/],
    ['float16 as a Float32Array of the element count', { dtype: 'float16', shape: [4], data: new Float32Array(4) }, /holds 16 bytes.*needs 8/],
    ['a plain number array', { dtype: 'float32', shape: [3], data: [1, 2, 3] }, /TypedArray/],
    ['a DataView', { dtype: 'uint8', shape: [4], data: new DataView(new ArrayBuffer(4)) }, /TypedArray/],
    ['no data at all', { dtype: 'uint8', shape: [4] }, /TypedArray/],
    ['string tensor with a number', { dtype: 'string', shape: [2], data: ['a', 1] }, /string\[\] of 2/],
    ['string tensor with the wrong count', { dtype: 'string', shape: [2, 2], data: ['a', 'b', 'c'] }, /string\[\] of 4/],
    ['string tensor with a TypedArray', { dtype: 'string', shape: [1], data: new Uint8Array(1) }, /string\[\]/],
    ['onnxruntime-like with a wrong length', { type: 'uint16', dims: [3], data: new Uint16Array(2) }, /holds 4 bytes.*needs 6/],
    ['tfjs-like with an unsupported dtype', { dtype: 'complex64', shape: [1], dataSync: () => new Float32Array(2) }, /complex64/],
  ])('%s', (_, value, message) => {
    expectThrows(() => toTensor('Rendezvous.send', loose(value)), INVALID, message);
  });

  test('the message names the call', () => {
    expectThrows(() => toTensor('Rendezvous.send', loose({ dtype: 'nope' })), INVALID, /^Rendezvous\.send: /);
  });
});
