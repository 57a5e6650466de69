// Property-based fuzz of every decoder of a peer's input in the rendezvous: control messages,
// tensor meta, string tensor content and keys. Whatever a peer sends is either refused with
// the decoder's typed error or decodes to a value that holds every invariant the manager
// relies on. RVMA_FUZZ_SEED=<n> replays a reported failure (or explores another seed).
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { createKey, parseKey, taskOf } from '../../src/rendezvous/key';
import { type ControlMessage, type ControlMessageError, Kind, decode, encode } from '../../src/rendezvous/messages';
import { PUSH_HEADER_BYTES, pushedStep } from '../../src/rendezvous/push';
import { MAX_CONTENT_BYTES, type TensorMeta, checkMeta, decodeStrings, encodeContent, packValue, unpackValue } from '../../src/tensor/codec';
import { DTYPES, elementSize } from '../../src/tensor/dtypes';
import { elementCount } from '../../src/tensor/tensor';
import { expectThrows } from '../helpers/errors';
import { assertRefusal, byteEdits, fail, fromHex, fuzzer, hex, msgpackLike, mutateBytes, printable } from '../helpers/fuzz';

const PROTOCOL = 'ERR_RVMA_PROTOCOL';
const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 2 ** 32 - 1;

const { fuzz } = fuzzer('test/rendezvous/decoder-fuzz', 0x5eed);

// ---- the invariants decoded values must hold

const isIndex = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const isU64 = (v: unknown) => typeof v === 'bigint' && v >= 0n && v <= U64_MAX;

function assertKeys(value: object, keys: string[]): void {
  const own = Object.keys(value).sort();
  if (!isDeepStrictEqual(own, [...keys].sort())) fail(`fields ${own.join(',')}, expected ${keys.join(',')}`);
}

/** What the manager relies on in a meta: a real tensor shape whose size matches the byte count. */
function assertMeta(meta: TensorMeta): void {
  if (meta === null || typeof meta !== 'object') fail('meta is not a record', meta);
  assertKeys(meta, ['dtype', 'shape', 'isDead', 'byteSize']);
  if (!(DTYPES as readonly unknown[]).includes(meta.dtype)) fail('unknown dtype', meta);
  if (!Array.isArray(meta.shape) || !meta.shape.every(isIndex)) fail('shape is not non-negative safe integers', meta);
  const count = elementCount(meta.shape);
  if (!Number.isSafeInteger(count)) fail('shape has no safe element count', meta);
  if (typeof meta.isDead !== 'boolean') fail('isDead is not a boolean', meta);
  if (!isIndex(meta.byteSize) || meta.byteSize > MAX_CONTENT_BYTES) fail('byteSize out of range', meta);
  // Dead tensors travel as meta only; strings need at least their u32 lengths.
  if (meta.isDead && meta.byteSize !== 0) fail('a dead tensor carries bytes', meta);
  if (!meta.isDead && meta.dtype !== 'string' && meta.byteSize !== count * elementSize(meta.dtype)) fail('byteSize does not match shape', meta);
  if (!meta.isDead && meta.dtype === 'string' && meta.byteSize < 4 * count) fail('byteSize too small for the strings', meta);
}

const FROM = ['from', 'fromIncarnation'];
const FIELDS: Record<number, string[]> = {
  [Kind.TensorRequest]: ['kind', ...FROM, 'key', 'stepId', 'requestIndex', 'dataVaddr', 'cachedMeta', 'pushVaddr'],
  [Kind.MetaDataResponse]: ['kind', ...FROM, 'requestIndex', 'meta', 'checksum'],
  [Kind.TensorReRequest]: ['kind', ...FROM, 'requestIndex', 'dataVaddr'],
  [Kind.ErrorStatus]: ['kind', ...FROM, 'requestIndex', 'code', 'message'],
  [Kind.TensorCancel]: ['kind', ...FROM, 'requestIndex'],
  [Kind.PushAccepted]: ['kind', ...FROM, 'key', 'pushVaddr'],
  [Kind.NotPushed]: ['kind', ...FROM, 'key', 'stepId', 'dropped'],
  [Kind.PushEnded]: ['kind', ...FROM],
};

/** Fields a message of the kind may carry or leave out. */
const OPTIONAL: Record<number, string[]> = { [Kind.NotPushed]: ['meta'] };

function assertMessage(m: ControlMessage): void {
  const fields = FIELDS[m.kind];
  if (!fields) fail('unknown kind decoded', m.kind);
  assertKeys(m, [...fields, ...(OPTIONAL[m.kind] ?? []).filter((f) => f in m)]);
  if (typeof m.from !== 'string' || typeof m.fromIncarnation !== 'string') fail('sender is not strings', m);
  if ('requestIndex' in m && !isIndex(m.requestIndex)) fail('requestIndex is not a non-negative safe integer', m);
  switch (m.kind) {
    case Kind.TensorRequest:
      if (typeof m.key !== 'string') fail('key is not a string', m);
      if (!/^\d{1,20}$/.test(m.stepId) || BigInt(m.stepId) > U64_MAX) fail('stepId is not a u64 in decimal', m);
      if (!isU64(m.dataVaddr)) fail('dataVaddr is not a u64', m);
      if (m.cachedMeta !== null) assertMeta(m.cachedMeta);
      if (!isU64(m.pushVaddr)) fail('pushVaddr is not a u64', m);
      return;
    case Kind.PushAccepted:
      if (typeof m.key !== 'string') fail('key is not a string', m);
      if (!isU64(m.pushVaddr) || m.pushVaddr === 0n) fail('pushVaddr is not a nonzero u64', m);
      return;
    case Kind.NotPushed:
      if (typeof m.key !== 'string') fail('key is not a string', m);
      if (!/^\d{1,20}$/.test(m.stepId) || BigInt(m.stepId) > U64_MAX) fail('stepId is not a u64 in decimal', m);
      if (typeof m.dropped !== 'boolean') fail('dropped is not a boolean', m);
      if (m.meta !== undefined) assertMeta(m.meta);
      return;
    case Kind.MetaDataResponse:
      assertMeta(m.meta);
      if (m.checksum !== null && !(Number.isInteger(m.checksum) && m.checksum >= 0 && m.checksum <= U32_MAX)) {
        fail('checksum is not a crc32', m);
      }
      return;
    case Kind.TensorReRequest:
      // The re-request names the mailbox the receiver reallocated: 0 names none.
      if (!isU64(m.dataVaddr) || m.dataVaddr === 0n) fail('dataVaddr is not a mailbox', m);
      return;
    case Kind.ErrorStatus:
      if (typeof m.code !== 'string' || typeof m.message !== 'string') fail('code or message is not a string', m);
  }
}

/** Comparable form of a message (JSON with bigints; -0 and 0 alike, as msgpack packs them). */
const canonical = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

function checkControl(bytes: Uint8Array): void {
  let message: ControlMessage;
  try {
    message = decode(bytes);
  } catch (error) {
    assertRefusal(error, PROTOCOL);
    const answering = (error as ControlMessageError).answering;
    // A refusal that names its request fails that recv: the name must be one the manager can look up.
    if (answering !== undefined && (typeof answering.from !== 'string' || !isIndex(answering.requestIndex))) {
      fail('refusal names a malformed request', answering);
    }
    return;
  }
  assertMessage(message);
  // Accepted means representable: our own encoder carries it unchanged.
  const again = decode(encode(message));
  if (canonical(again) !== canonical(message)) fail('re-encoding changed the message', { message, again });
}

// ---- generators: valid values built with the library's own encoders

// Mostly ASCII (the ids and keys peers really send), sometimes any code point.
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 16 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
);
const u64 = fc.bigInt({ min: 0n, max: U64_MAX });
const index = fc.oneof(fc.nat(1000), fc.maxSafeNat());

const jobName = fc.oneof(
  fc.constantFrom('worker', 'ps', 'a b', 'é', '𐀀', ':', '-1'),
  fc.string({ minLength: 1, maxLength: 8 }).map((s) => s.replace(/[/;]/g, '_')),
);
const devicePart = fc.option(fc.tuple(fc.boolean(), fc.constantFrom('CPU', 'GPU', 'cpu', 'TPU_X', '_'), fc.nat(9)));
const deviceName = fc
  .tuple(jobName, fc.nat(99), fc.nat(99), devicePart)
  .map(([job, replica, task, dev]) => {
    const base = `/job:${job}/replica:${replica}/task:${task}`;
    return dev ? `${base}/${dev[0] ? 'device:' : ''}${dev[1]}:${dev[2]}` : base;
  });
const incarnation = fc.oneof(
  u64,
  // Every spelling of one incarnation: upper case, zero-padded to 16, one leading zero more.
  fc.tuple(u64, fc.nat(2)).map(([v, form]) => {
    const hex = v.toString(16);
    return [hex.toUpperCase(), hex.padStart(16, '0'), hex.padStart(Math.min(16, hex.length + 1), '0')][form];
  }),
);
const tensorName = fc.string({ unit: 'binary', minLength: 1, maxLength: 16 }).filter((s) => !s.includes(';'));
const keyParts = fc.tuple(deviceName, incarnation, deviceName, tensorName, fc.record({ frameId: index, iterId: index }));
const validKey = keyParts.map((p) => createKey(...p));

const shape = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.nat(12), { maxLength: 5 }) },
  // Empty tensors: any dims beside a 0.
  {
    weight: 1,
    arbitrary: fc.tuple(fc.array(fc.maxSafeNat(), { maxLength: 3 }), fc.nat(3)).map(([dims, at]) => [...dims.slice(0, at), 0, ...dims.slice(at)]),
  },
  // One long dimension, up to the largest content.
  { weight: 1, arbitrary: fc.integer({ min: 0, max: MAX_CONTENT_BYTES / 8 }).map((n) => [n]) },
);
const validMeta: fc.Arbitrary<TensorMeta> = fc
  .tuple(fc.constantFrom(...DTYPES), shape, fc.boolean(), fc.nat(64))
  .map(([dtype, dims, isDead, spare]) => {
    const count = elementCount(dims);
    // What metaOf gives: nothing when dead, the encoded size for strings (lengths, then bytes).
    const byteSize = isDead ? 0 : dtype === 'string' ? 4 * count + spare : count * elementSize(dtype);
    return { dtype, shape: dims, isDead, byteSize };
  })
  .filter((m) => m.byteSize <= MAX_CONTENT_BYTES);

const sender = { from: text, fromIncarnation: fc.oneof(u64.map((v) => v.toString(16).padStart(16, '0')), text) };
const validMessage: fc.Arbitrary<ControlMessage> = fc.oneof(
  fc
    .record({ ...sender, key: fc.oneof(validKey, text), stepId: u64.map(String), requestIndex: index, dataVaddr: u64, cachedMeta: fc.option(validMeta), pushVaddr: u64 })
    .map((r) => ({ kind: Kind.TensorRequest as const, ...r })),
  fc
    .record({ ...sender, requestIndex: index, meta: validMeta, checksum: fc.option(fc.integer({ min: 0, max: U32_MAX })) })
    .map((r) => ({ kind: Kind.MetaDataResponse as const, ...r })),
  fc
    .record({ ...sender, requestIndex: index, dataVaddr: fc.bigInt({ min: 1n, max: U64_MAX }) })
    .map((r) => ({ kind: Kind.TensorReRequest as const, ...r })),
  fc
    .record({ ...sender, requestIndex: index, code: fc.oneof(fc.constantFrom('ERR_RVMA_ABORTED', 'EACCES'), text), message: text })
    .map((r) => ({ kind: Kind.ErrorStatus as const, ...r })),
  fc.record({ ...sender, requestIndex: index }).map((r) => ({ kind: Kind.TensorCancel as const, ...r })),
  fc.record({ ...sender, key: fc.oneof(validKey, text), pushVaddr: fc.bigInt({ min: 1n, max: U64_MAX }) }).map((r) => ({ kind: Kind.PushAccepted as const, ...r })),
  fc
    .record({ ...sender, key: fc.oneof(validKey, text), stepId: u64.map(String), dropped: fc.boolean(), meta: validMeta }, { requiredKeys: ['from', 'fromIncarnation', 'key', 'stepId', 'dropped'] })
    .map((r) => ({ kind: Kind.NotPushed as const, ...r })),
  fc.record(sender).map((r) => ({ kind: Kind.PushEnded as const, ...r })),
);

// ---- generators: mutations


// Packers a hostile peer could use: bigints beyond 64 bits as msgpackr's extension, typed
// arrays, and inline record definitions (which our unpacker decodes).
const bigintPackr = new Packr({ useRecords: false, useBigIntExtension: true, moreTypes: true });
const recordPackr = new Packr({ useRecords: true, useBigIntExtension: true });
const PACKERS = [(v: unknown) => packValue(v), (v: unknown) => bigintPackr.pack(v), (v: unknown) => recordPackr.pack(v)];

function packWith(which: number, value: unknown): Uint8Array {
  for (let k = 0; k < PACKERS.length; k++) {
    try {
      return PACKERS[(which + k) % PACKERS.length](value);
    } catch {
      // a value that packer refuses (a bigint beyond 64 bits): try the next
    }
  }
  return packValue(null);
}

const LONG = 'x'.repeat(9000); // longer than a control buffer
const junk: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom<unknown>(
      null, undefined, NaN, Infinity, -Infinity, -0, -1, 0.5, 1 + 2 ** -52, 2 ** 53, 2 ** 64, -(2 ** 63), Number.MAX_VALUE,
      0, 1, 2, 3, 4, 5, 99, 2 ** 32 + 1, '0', '1', '',
      '-1', '0x10', ' 1', '1 ', '1e3', '１', '007', '0'.repeat(21), '18446744073709551616', '18446744073709551615', LONG,
      true, false, [], [[[[[[]]]]]], {}, { toString: 1 }, { valueOf: 1, toString: 1 }, JSON.parse('{"__proto__":{"kind":1}}'),
      new Date(0), new Set([1]), new Map([[1, 2]]), /x/g, new Error('e'), new Float32Array([1.5]), Uint8Array.from([1, 2]),
      'float32', 'string', 'complex64', [-1], [1.5], [NaN], [2 ** 53], ['2'], [[2]], [2 ** 26 + 1, 2 ** 27 + 1],
    ),
  },
  { weight: 2, arbitrary: fc.bigInt({ min: -(1n << 80n), max: 1n << 80n }) },
  { weight: 2, arbitrary: fc.oneof(fc.double(), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), text) },
  { weight: 1, arbitrary: fc.array(fc.oneof(fc.integer(), fc.double(), fc.maxSafeNat()), { maxLength: 6 }) },
  { weight: 1, arbitrary: validMeta },
  {
    weight: 1,
    arbitrary: fc.anything({
      maxDepth: 2,
      maxKeys: 4,
      withBigInt: true,
      withDate: true,
      withTypedArray: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withSparseArray: true,
    }),
  },
);

/** Target 1 is the record's meta (others the record); what 0 deletes, 2 adds a field, others replace. */
type FieldEdit = [target: number, field: number, what: number, value: unknown];
const fieldEdits = fc.array(fc.tuple(fc.nat(3), fc.nat(), fc.nat(4), junk), { minLength: 1, maxLength: 3 });

function editRecord(record: Record<string, unknown>, edits: FieldEdit[]): Record<string, unknown> {
  const r: Record<string, unknown> = { ...record };
  const metaKey = 'meta' in r ? 'meta' : 'cachedMeta' in r && r.cachedMeta ? 'cachedMeta' : undefined;
  // Nested edits first, on a copy: a later top-level edit may put shared junk there.
  if (metaKey) r[metaKey] = { ...(r[metaKey] as object), shape: [...(r[metaKey] as TensorMeta).shape] };
  const ordered = [...edits.filter((e) => e[0] === 1), ...edits.filter((e) => e[0] !== 1)];
  for (const [target, field, what, value] of ordered) {
    const nested = target === 1 && metaKey !== undefined;
    const into = nested ? (r[metaKey!] as Record<string, unknown>) : r;
    // shape twice: it is where most meta checks are.
    const fields = nested ? ['dtype', 'shape', 'isDead', 'byteSize', 'shape'] : Object.keys(record);
    const name = fields[field % fields.length];
    if (nested && name === 'shape' && what >= 3 && Array.isArray(into.shape)) {
      // A dim of the wrong type or range among good ones.
      const dims = into.shape as unknown[];
      dims[field % (dims.length + 1)] = value;
    } else if (what === 0) delete into[name];
    else if (what === 2) into[`extra${field % 7}`] = value;
    else into[name] = value;
  }
  return r;
}

/** The record as encode() hands it to msgpack (vaddrs as decimal strings). */
function wireRecord(m: ControlMessage): Record<string, unknown> {
  const record: Record<string, unknown> = { ...m };
  if ('dataVaddr' in m) record.dataVaddr = String(m.dataVaddr);
  if ('pushVaddr' in m) record.pushVaddr = String(m.pushVaddr);
  return record;
}

const arbitraryBytes = msgpackLike([0x84, 0x86, 0x87, 0x88, 0xde, 0xdf, 0x92, 0xdc, 0xc7, 0xd4, 0xd5, 0xc9]);

// ---- control messages

describe('control messages: decode', () => {
  fuzz(
    'valid messages round-trip',
    10_000,
    validMessage,
    (message) => {
      const back = decode(encode(message));
      if (!isDeepStrictEqual(back, message)) fail('round trip changed the message', { message, back });
      assertMessage(back);
    },
    (message) => hex(encode(message)),
  );

  fuzz('arbitrary bytes', 20_000, arbitraryBytes, checkControl, hex);

  const mutated = fc.tuple(validMessage, byteEdits).map(([m, edits]) => mutateBytes(encode(m), edits));
  fuzz('valid messages with their bytes mutated', 40_000, mutated, checkControl, hex);

  const edited = fc
    .tuple(validMessage, fieldEdits, fc.nat(2))
    .map(([m, edits, packer]) => packWith(packer, editRecord(wireRecord(m), edits)));
  fuzz('valid messages with fields missing, added, or of the wrong type or range', 30_000, edited, checkControl, hex);
});

// ---- pushed frames: a step id in front of the content, in a buffer of the push mailbox

describe('pushed frames: pushedStep', () => {
  // A frame as the mailbox hands it over: its buffer, and the byte count the peer's put claims.
  const frames = fc.tuple(fc.uint8Array({ maxLength: 32 }), fc.integer({ min: -4, max: 40 }), fc.nat(8));
  fuzz(
    'any buffer and byte count',
    20_000,
    frames,
    ([bytes, count, at]) => {
      const frame = bytes.subarray(Math.min(at, bytes.length)); // a view at an offset, as pooled buffers are
      const step = pushedStep(frame, count);
      const whole = count >= PUSH_HEADER_BYTES && count <= frame.byteLength;
      if (!whole) {
        if (step !== undefined) fail('a step read from a frame without a whole header', { count, length: frame.byteLength });
        return;
      }
      const expected = Buffer.from(frame.subarray(0, PUSH_HEADER_BYTES)).readBigUInt64LE(0);
      if (step !== expected) fail('the step is not the header read little-endian', { step, expected });
    },
    ([bytes, count, at]) => `${hex(bytes)} count ${count} at ${at}`,
  );
});

// ---- tensor meta (also reached through the control messages above)

function checkMetaValue(value: unknown): void {
  let meta: TensorMeta;
  try {
    meta = checkMeta(value);
  } catch (error) {
    return assertRefusal(error, PROTOCOL);
  }
  assertMeta(meta);
  if (meta.shape === (value as TensorMeta).shape) fail('the checked meta shares its shape with the peer record');
}

function checkMetaBytes(bytes: Uint8Array): void {
  let value: unknown;
  try {
    value = unpackValue(bytes);
  } catch {
    return; // not msgpack: decode() refuses it before any meta is checked (fuzzed above)
  }
  checkMetaValue(value);
}

describe('tensor meta: checkMeta of unpacked peer bytes', () => {
  fuzz(
    'valid metas round-trip',
    10_000,
    validMeta,
    (meta) => {
      const back = checkMeta(unpackValue(packValue(meta)));
      if (!isDeepStrictEqual(back, meta)) fail('round trip changed the meta', { meta, back });
    },
    (meta) => hex(packValue(meta)),
  );

  const edited = fc
    .tuple(validMeta, fieldEdits, fc.nat(2))
    .map(([meta, edits, packer]) => packWith(packer, editRecord({ meta }, edits).meta));
  fuzz('valid metas with fields missing, added, or of the wrong type or range', 40_000, edited, checkMetaBytes, hex);

  const mutated = fc.tuple(validMeta, byteEdits).map(([meta, edits]) => mutateBytes(packValue(meta), edits));
  fuzz('valid metas with their bytes mutated', 20_000, mutated, checkMetaBytes, hex);

  const anything = fc.tuple(junk, fc.nat(2)).map(([value, packer]) => packWith(packer, value));
  fuzz('anything a peer could pack', 30_000, anything, checkMetaBytes, hex);
});

// ---- string tensor content

/** The layout, restated: every u32 LE length first, then exactly that many bytes in total. */
function wellFormedStrings(count: number, bytes: Uint8Array): boolean {
  if (bytes.length < 4 * count) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let total = 4 * count;
  for (let i = 0; i < count; i++) total += view.getUint32(4 * i, true);
  return total === bytes.length;
}

function checkStrings([dims, bytes]: [number[], Uint8Array]): void {
  let strings: string[];
  try {
    strings = decodeStrings(dims, bytes);
  } catch (error) {
    assertRefusal(error, PROTOCOL);
    if (wellFormedStrings(elementCount(dims), bytes)) fail('well-formed content refused');
    return;
  }
  if (!wellFormedStrings(elementCount(dims), bytes)) fail('malformed content accepted', strings);
  if (strings.length !== elementCount(dims) || !strings.every((s) => typeof s === 'string')) fail('not one string per element', strings);
}

/** A shape with the given number of elements (string content is shaped by the meta beside it). */
const shapeOf = (count: number, form: number) => [[count], [1, count], [count, 1, 1], count === 0 ? [0, form + 1] : [count]][form % 4];
const stringTensor = fc.tuple(fc.array(fc.string({ unit: 'binary', maxLength: 12 }), { maxLength: 8 }), fc.nat(3))
  .map(([strings, form]) => ({ strings, dims: shapeOf(strings.length, form) }));

describe('string tensor content: decodeStrings', () => {
  fuzz(
    'valid contents round-trip',
    10_000,
    stringTensor,
    ({ strings, dims }) => {
      const back = decodeStrings(dims, encodeContent({ dtype: 'string', shape: dims, data: strings }));
      if (!isDeepStrictEqual(back, strings)) fail('round trip changed the strings', { strings, back });
    },
    ({ strings, dims }) => `shape ${printable(dims)} strings ${printable(strings)}`,
  );

  // The shape may also be off by one element from the content.
  const mutated = fc
    .tuple(stringTensor, byteEdits, fc.integer({ min: -1, max: 1 }))
    .map(([{ strings, dims }, edits, recount]): [number[], Uint8Array] => [
      shapeOf(Math.max(0, strings.length + recount), 0),
      mutateBytes(encodeContent({ dtype: 'string', shape: dims, data: strings }), edits),
    ]);
  fuzz('valid contents mutated', 50_000, mutated, checkStrings, ([dims, bytes]) => `shape ${printable(dims)} bytes ${hex(bytes)}`);

  fuzz(
    'arbitrary bytes under any shape',
    40_000,
    fc.tuple(fc.oneof(fc.array(fc.nat(4), { maxLength: 3 }), shape), fc.uint8Array({ maxLength: 48 })),
    checkStrings,
    ([dims, bytes]) => `shape ${printable(dims)} bytes ${hex(bytes)}`,
  );
});

// ---- keys: a request's key is a peer's string

// parseKey is public API as well, so it refuses with ERR_RVMA_INVALID_ARGUMENT: the code the
// manager sends back to a peer whose key is malformed (wire.test.ts pins it).
const INVALID = 'ERR_RVMA_INVALID_ARGUMENT';

function checkKey(key: unknown): void {
  let parsed: ReturnType<typeof parseKey>;
  try {
    parsed = parseKey(key as string);
  } catch (error) {
    return assertRefusal(error, INVALID);
  }
  if (parsed.srcTask !== taskOf(parsed.srcDevice) || parsed.dstTask !== taskOf(parsed.dstDevice)) {
    fail("the tasks are not the devices' tasks", parsed);
  }
  // What parseKey accepts, createKey rebuilds, and it reads back the same.
  let rebuilt: string;
  try {
    rebuilt = createKey(parsed.srcDevice, parsed.srcIncarnation, parsed.dstDevice, parsed.name, parsed);
  } catch (error) {
    fail('createKey refuses what parseKey accepted', { parsed, error: String(error) });
  }
  if (!isDeepStrictEqual(parseKey(rebuilt), parsed)) fail('the rebuilt key parses differently', parsed);
}

const KEY_CHARS = [';', ':', '/', '0', '9', 'a', 'G', 'é', '\u0000', ' ', '9'.repeat(25), ';;', 'job:', '/task:'];
type TextEdit = [op: number, at: number, pick: number];
const textEdits = fc.array(fc.tuple(fc.nat(3), fc.nat(), fc.nat()), { minLength: 1, maxLength: 3 });

function mutateText(input: string, edits: TextEdit[]): string {
  let s = input;
  for (const [op, at, pick] of edits) {
    const i = at % (s.length + 1);
    const piece = KEY_CHARS[pick % KEY_CHARS.length];
    if (op === 0) s = s.slice(0, i) + piece + s.slice(i + 1);
    else if (op === 1) s = s.slice(0, i) + piece + s.slice(i);
    else if (op === 2) s = s.slice(0, i) + s.slice(i + 1 + (pick % 4));
    else s = s.slice(0, i);
  }
  return s;
}

describe('keys: parseKey', () => {
  fuzz(
    'valid keys round-trip',
    10_000,
    keyParts,
    (parts) => {
      const [srcDevice, incarnation, dstDevice, name, { frameId, iterId }] = parts;
      // As TensorFlow writes it: 16 lowercase hex digits, zero-padded.
      const srcIncarnation = (typeof incarnation === 'bigint' ? incarnation.toString(16) : incarnation).toLowerCase().padStart(16, '0');
      const tasks = { srcTask: taskOf(srcDevice), dstTask: taskOf(dstDevice) };
      const expected = { srcDevice, srcIncarnation, dstDevice, name, frameId, iterId, ...tasks };
      const parsed = parseKey(createKey(...parts));
      if (!isDeepStrictEqual(parsed, expected)) fail('round trip changed the key', { expected, parsed });
    },
    (parts) => printable(createKey(...parts)),
  );

  const mutated = fc.tuple(validKey, textEdits).map(([key, edits]) => mutateText(key, edits));
  fuzz('valid keys mutated', 60_000, mutated, checkKey, printable);

  fuzz('arbitrary strings and values', 30_000, fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), junk), checkKey, printable);
});

// ---- inputs the fuzz found: each was accepted, or refused with the wrong error, before its fix

describe('inputs the fuzz found', () => {
  test('a kind whose toString is no function: refused, not a TypeError from describing it', () => {
    // {kind: {toString: 1}, from: '', fromIncarnation: '0'.repeat(16), requestIndex: 0, code: '', message: ''}
    const bytes = fromHex(
      'de0006a46b696e64de0001a8746f537472696e6701a466726f6da0af66726f6d496e6361726e6174696f6eb03030303030303030303030303030' +
        '3030ac72657175657374496e64657800a4636f6465a0a76d657373616765a0',
    );
    expectThrows(() => decode(bytes), PROTOCOL, /unknown control message kind object/);
  });

  test('a cached meta whose byte size is not its shape (float16[] of 0 bytes): refused', () => {
    const bytes = fromHex(
      'de0008a46b696e6401a466726f6da0af66726f6d496e6361726e6174696f6ea0a36b6579d93c2f6a6f623a202f7265706c6963613a302f7461' +
        '736b3a303b303b2f6a6f623a776f726b65722f7265706c6963613a302f7461736b3a303b003b303a30a6737465704964a130ac726571756573' +
        '74496e64657800a9646174615661646472a130aa6361636865644d657461de0004a56474797065a7666c6f61743136a5736861706590a66973' +
        '44656164c2a86279746553697a6500',
    );
    expectThrows(() => decode(bytes), PROTOCOL, /malformed tensor meta/);
  });

  test('a meta response whose byte size is not its shape (uint16[1,1,1,1] of 0 bytes): refused, naming its request', () => {
    const bytes = fromHex(
      'de0006a46b696e6402a466726f6dacf0908080f0908080f0908080af66726f6d496e6361726e6174696f6eb03030303030303030303030303030' +
        '3030ac72657175657374496e646578cb41f0000000000000a46d657461de0004a56474797065a675696e743136a573686170659401010101a669' +
        '7344656164c2a86279746553697a6500a8636865636b73756dc0',
    );
    const error = expectThrows(() => decode(bytes), PROTOCOL, /malformed tensor meta/) as ControlMessageError;
    expect(error.answering).toEqual({ from: '\u{10000}'.repeat(3), requestIndex: 2 ** 32 });
  });

  test('a dead meta whose shape has no safe element count (2^21 x (2^32 + 1)): refused', () => {
    const bytes = fromHex(
      'de0004a56474797065a7666c6f61743136a5736861706592ce00200000cb41f0000000100000a6697344656164c3a86279746553697a6500',
    );
    expectThrows(() => checkMeta(unpackValue(bytes)), PROTOCOL, /malformed tensor meta/);
  });

  test('a meta response checksum of -1 (no crc32 is negative): refused', () => {
    const bytes = fromHex(
      'de0006a46b696e6402a466726f6da0af66726f6d496e6361726e6174696f6ea0ac72657175657374496e64657800a46d657461de0004a56474' +
        '797065a7666c6f61743136a5736861706590a6697344656164c2a86279746553697a6502a8636865636b73756dff',
    );
    expectThrows(() => decode(bytes), PROTOCOL, /checksum is invalid/);
  });

  test('a re-request for dataVaddr 0 (no mailbox): refused', () => {
    const bytes = fromHex(
      'de0005a46b696e6403a466726f6da0af66726f6d496e6361726e6174696f6eb030303030303030303030303030303030ac7265717565737449' +
        '6e64657800a9646174615661646472a130',
    );
    expectThrows(() => decode(bytes), PROTOCOL, /dataVaddr is invalid/);
  });

  test('five bytes declaring an array of 2^23 items: refused before msgpackr allocates it', () => {
    // msgpackr refused these too, but only after allocating the array (2^25 - 1 items: 256 MiB).
    for (const bytes of [fromHex('dd00800000'), fromHex('dd01ffffff')]) {
      const error = expectThrows(() => decode(bytes), PROTOCOL, /undecodable/);
      expect((error.cause as Error).message).toMatch(/declares more items than its bytes hold/);
    }
  });

  test('string content with a byte past its last string (shape [0], bytes 00): refused', () => {
    expectThrows(() => decodeStrings([0], fromHex('00')), PROTOCOL, /1 bytes past its last string/);
  });

  test('a key whose frame_id is beyond 2^53: refused, as createKey could not make it', () => {
    const key =
      '/job:worker/replica:0/task:0;0;/job:worker/replica:0/task:0/device:CPU:0;\u{10000};9999999999999999999999999:1000000000000000';
    expectThrows(() => parseKey(key), INVALID, /frame_id:iter_id must be two integers below 2\^53/);
  });
});
