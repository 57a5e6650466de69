// The wire forms of tensors: string tensors as little-endian u32 lengths followed by UTF-8,
// metadata as msgpack checked on arrival (a peer's bytes are never trusted).
import { MAX_CONTENT_BYTES, checkMeta, decodeStrings, encodeContent, metaOf, packValue, sameMeta, unpackValue } from '../../src/tensor/codec';
import { type Tensor } from '../../src';
import { expectThrows } from '../helpers/errors';

const PROTOCOL = 'ERR_RVMA_PROTOCOL';

describe('string content', () => {
  const strings = ['', 'a', 'héllo', '日本語', '🎉', '', 'x'.repeat(300), 'nul\u0000inside'];

  test('layout: every length first (u32 LE), then the UTF-8 bytes in order', () => {
    const out = Buffer.from(encodeContent({ dtype: 'string', shape: [3], data: ['ab', '', 'é'] }));
    expect(out.toString('hex')).toBe('02000000' + '00000000' + '02000000' + '6162' + 'c3a9');
  });

  test('round trip keeps unicode, empty strings and embedded NULs', () => {
    const t: Tensor = { dtype: 'string', shape: [2, 4], data: strings };
    expect(decodeStrings([2, 4], encodeContent(t))).toEqual(strings);
  });

  test('zero strings encode to zero bytes', () => {
    expect(encodeContent({ dtype: 'string', shape: [0], data: [] }).byteLength).toBe(0);
    expect(decodeStrings([0], new Uint8Array(0))).toEqual([]);
  });

  test('decodes from a view that does not start at offset 0', () => {
    const encoded = Buffer.from(encodeContent({ dtype: 'string', shape: [2], data: ['xy', 'z'] }));
    const padded = new Uint8Array(encoded.length + 3);
    padded.set(encoded, 3);
    expect(decodeStrings([2], padded.subarray(3))).toEqual(['xy', 'z']);
  });

  test('truncated lengths or bytes are a protocol error', () => {
    const encoded = encodeContent({ dtype: 'string', shape: [2], data: ['abc', 'de'] });
    expectThrows(() => decodeStrings([2], encoded.subarray(0, 6)), PROTOCOL, /truncated/);
    expectThrows(() => decodeStrings([2], encoded.subarray(0, encoded.byteLength - 1)), PROTOCOL, /truncated/);
    expectThrows(() => decodeStrings([3], encoded), PROTOCOL, /truncated/);
  });

  test('numeric content is the data viewed in place, not a copy', () => {
    const data = new Int16Array([1, -1, 300]);
    const bytes = encodeContent({ dtype: 'int16', shape: [3], data });
    expect(bytes.buffer).toBe(data.buffer);
    expect(Buffer.from(bytes).toString('hex')).toBe('0100ffff2c01');
  });
});

describe('tensor meta', () => {
  const meta = { dtype: 'float32' as const, shape: [2, 3], isDead: false, byteSize: 24 };

  test('metaOf: byte size from the content, 0 when dead', () => {
    const t: Tensor = { dtype: 'float32', shape: [2, 3], data: new Float32Array(6) };
    expect(metaOf(t, false, encodeContent(t))).toEqual(meta);
    expect(metaOf(t, true, new Uint8Array(0))).toEqual({ ...meta, isDead: true, byteSize: 0 });
  });

  test('msgpack round trip through checkMeta', () => {
    expect(checkMeta(unpackValue(packValue(meta)))).toEqual(meta);
  });

  test('sameMeta compares dtype, shape, deadness and size', () => {
    expect(sameMeta(meta, { ...meta, shape: [2, 3] })).toBe(true);
    expect(sameMeta(undefined, meta)).toBe(false);
    expect(sameMeta(meta, { ...meta, shape: [3, 2] })).toBe(false);
    expect(sameMeta(meta, { ...meta, shape: [2, 3, 1] })).toBe(false);
    expect(sameMeta(meta, { ...meta, dtype: 'int32' })).toBe(false);
    expect(sameMeta(meta, { ...meta, isDead: true })).toBe(false);
    expect(sameMeta(meta, { ...meta, byteSize: 25 })).toBe(false);
  });

  test.each<[string, unknown]>([
    ['null', null],
    ['a string', 'meta'],
    ['unknown dtype', { ...meta, dtype: 'complex64' }],
    ['negative dim', { ...meta, shape: [-2, 3] }],
    ['shape not an array', { ...meta, shape: '2,3' }],
    ['isDead not boolean', { ...meta, isDead: 0 }],
    ['negative byteSize', { ...meta, byteSize: -1 }],
    ['fractional byteSize', { ...meta, byteSize: 1.5 }],
    ['missing byteSize', { dtype: 'float32', shape: [1], isDead: false }],
    ['a byteSize beyond the largest buffer', { ...meta, byteSize: MAX_CONTENT_BYTES + 1 }],
  ])('checkMeta refuses %s as a protocol error', (_, value) => {
    expectThrows(() => checkMeta(value), PROTOCOL, /malformed tensor meta/);
  });
});
