// Property-based fuzz of the ring's control record decoder (peer bytes): each input is refused with
// ERR_RVMA_PROTOCOL or decodes to a value the ring relies on and re-encodes unchanged (the binary
// header, and the msgpack bodies of the kinds that have one).
// RVMA_FUZZ_SEED=<n> replays. Data frames and credit records are decoded natively: libFuzzer
// harness test/fuzz/fuzz_ring.cpp.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { Kind, MAX_RANKS, RECORD_HEADER_BYTES, type RingControl, type WireRecord, checkControl, decodeRecord, encodeRecord, packRecord } from '../../src/ring/records';
import { packValue } from '../../src/tensor/codec';
import { expectThrows } from '../helpers/errors';
import { assertRefusal, byteEdits, fail, fromHex, fuzzer, hex, inView, msgpackLike, mutateBytes } from '../helpers/fuzz';

const PROTOCOL = 'ERR_RVMA_PROTOCOL';
const MAX_TEXT = 4096;

const { fuzz } = fuzzer('test/ring/decoder-fuzz', 0x71e6);


// ---- control records: decodeRecord

const COMMON = ['gen', 'fromRank', 'base', 'kind'];
const FIELDS: Record<number, string[]> = {
  [Kind.Joined]: COMMON,
  [Kind.Around]: [...COMMON, 'id', 'origin', 'record', 'body'],
  [Kind.Ack]: [...COMMON, 'id'],
  [Kind.Direct]: [...COMMON, 'record'],
  [Kind.Failed]: [...COMMON, 'lost', 'reason'],
};
const CONTROL_FIELDS: Record<string, string[]> = {
  RESIZE_LAYERS: ['type', 'rank', 'start', 'end', 'isTail'],
  RESIZE_CHAIN: ['type', 'ranges'],
  CONTROL: ['type', 'body'],
};

const isIndex = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const isU32 = (v: unknown) => isIndex(v) && (v as number) <= 0xffff_ffff;
const isText = (v: unknown) => typeof v === 'string' && v.length <= MAX_TEXT;

function assertKeys(value: object, keys: string[]): void {
  const own = Object.keys(value).sort();
  if (!isDeepStrictEqual(own, [...keys].sort())) fail(`fields ${own.join(',')}, expected ${keys.join(',')}`);
}

/** What the ring relies on in an application record (generation.ts hands it to the application). */
function assertControl(c: RingControl): void {
  if (c === null || typeof c !== 'object') fail('record is not an object', c);
  const fields = CONTROL_FIELDS[c.type];
  if (!fields) fail('unknown control type decoded', c);
  assertKeys(c, fields);
  switch (c.type) {
    case 'RESIZE_LAYERS':
      if (!isIndex(c.rank) || !isIndex(c.start) || !isIndex(c.end) || c.end < c.start || typeof c.isTail !== 'boolean') fail('bad RESIZE_LAYERS', c);
      return;
    case 'RESIZE_CHAIN':
      if (!Array.isArray(c.ranges) || c.ranges.length > MAX_RANKS) fail('bad ranges', c);
      for (const r of c.ranges) {
        assertKeys(r, ['start', 'end']);
        if (!isIndex(r.start) || !isIndex(r.end) || r.end < r.start) fail('bad range', r);
      }
      return;
    case 'CONTROL':
      return;
  }
}

function assertRecord(r: WireRecord): void {
  const fields = FIELDS[r.kind];
  if (!fields) fail('unknown kind decoded', r.kind);
  assertKeys(r, fields);
  if (!isU32(r.gen) || !isU32(r.fromRank) || !isIndex(r.base)) fail('bad header', r);
  switch (r.kind) {
    case Kind.Joined:
      return;
    case Kind.Around:
      if (!isU32(r.id) || !isU32(r.origin) || !(r.body instanceof Uint8Array)) fail('bad around', r);
      return assertControl(r.record);
    case Kind.Ack:
      if (!isU32(r.id)) fail('bad ack', r);
      return;
    case Kind.Direct:
      return assertControl(r.record);
    case Kind.Failed:
      if (!isText(r.lost) || !isText(r.reason)) fail('bad failure notice', r);
  }
}

function checkBytes(bytes: Uint8Array): void {
  let record: WireRecord;
  try {
    record = decodeRecord(bytes);
  } catch (error) {
    return assertRefusal(error, PROTOCOL);
  }
  assertRecord(record);
  // Accepted means representable: our own encoder carries it unchanged, and what the
  // application is handed is what around() and sendControl() would accept from it.
  const encoded = encodeRecord(record);
  const again = decodeRecord(encoded);
  if (!isDeepStrictEqual(again, record)) fail('re-encoding changed the record', { record, again });
  // Every header byte is read and checked, and pass() forwards an AROUND body as it came.
  if (record.kind !== Kind.Direct && record.kind !== Kind.Failed && !isDeepStrictEqual(Buffer.from(encoded), Buffer.from(bytes))) fail('accepted bytes are not what encoding gives', record);
  if ('record' in record && !isDeepStrictEqual(checkControl(record.record), record.record)) fail('checkControl changes a decoded record', record);
}

// ---- generators: valid records

const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 16 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(MAX_TEXT), '\u{10000}'.repeat(MAX_TEXT / 2), '') },
);
const index = fc.oneof(fc.nat(1000), fc.maxSafeNat());
const u32 = fc.oneof(fc.nat(1000), fc.constant(0xffff_ffff), fc.nat({ max: 0xffff_ffff }));
const range = fc.tuple(index, fc.nat(1000)).map(([start, len]) => ({ start, end: Math.min(Number.MAX_SAFE_INTEGER, start + len) }));
// Bodies as an application builds them: JSON values (no -0, no undefined in a map). msgpackr
// reads a "__proto__" key back as "__proto_" (so that no map sets a prototype): none generated.
const body = fc
  .jsonValue({ maxDepth: 3 })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown)
  .filter((v) => !JSON.stringify(v).includes('"__proto__"'));
const validControl: fc.Arbitrary<RingControl> = fc.oneof(
  fc
    .tuple(index, range, fc.boolean())
    .map(([rank, { start, end }, isTail]) => ({ type: 'RESIZE_LAYERS' as const, rank, start, end, isTail })),
  fc.array(range, { maxLength: 8 }).map((ranges) => ({ type: 'RESIZE_CHAIN' as const, ranges })),
  body.map((b) => ({ type: 'CONTROL' as const, body: b })),
);
const header = { gen: u32, fromRank: u32, base: index };
const validRecord: fc.Arbitrary<WireRecord> = fc.oneof(
  fc.record(header).map((r) => ({ ...r, kind: Kind.Joined as const })),
  fc.record({ ...header, id: u32, origin: u32, record: validControl }).map((r) => ({ ...r, kind: Kind.Around as const })),
  fc.record({ ...header, id: u32 }).map((r) => ({ ...r, kind: Kind.Ack as const })),
  fc.record({ ...header, record: validControl }).map((r) => ({ ...r, kind: Kind.Direct as const })),
  fc.record({ ...header, lost: text, reason: text }).map((r) => ({ ...r, kind: Kind.Failed as const })),
);

// ---- generators: what a hostile or broken peer sends

const LONG = 'x'.repeat(MAX_TEXT + 1);
const HUGE = new Array<number>(MAX_RANKS + 1).fill(0); // more ranges than any ring has
const HUGE_RANGES = Array.from({ length: MAX_RANKS + 1 }, () => ({ start: 0, end: 0 }));
const junk: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom<unknown>(
      null, undefined, NaN, Infinity, -Infinity, -0, -1, 0.5, 2 ** 53, 2 ** 64, -(2 ** 63), Number.MAX_VALUE,
      0, 1, 2, 3, 4, 5, 6, 99, '0', '1', '', 'next', 'prev', 'NEXT', 'CONTROL', 'RESIZE_LAYERS', 'RESIZE_CHAIN', LONG,
      true, false, [], [[[]]], {}, { toString: 1 }, { valueOf: 1, toString: 1 }, JSON.parse('{"__proto__":{"kind":1}}'),
      { type: 'CONTROL' }, { type: 'CONTROL', body: 1, x: 1 }, { type: 'RESIZE_LAYERS', rank: 0, start: 1, end: 0, isTail: true },
      { type: 'RESIZE_CHAIN', ranges: [{ start: 0 }] }, { type: 'RESIZE_CHAIN', ranges: [[0, 1]] }, { type: { toString: 1 } },
      [{ start: 0, end: 1 }], [{ start: -1, end: 1 }], [{ start: 0, end: 1, x: 0 }], [null], HUGE,
      new Date(0), new Set([1]), new Map([[1, 2]]), /x/g, new Error('e'), new Float32Array([1.5]), Uint8Array.from([1, 2]),
    ),
  },
  { weight: 2, arbitrary: fc.bigInt({ min: -(1n << 80n), max: 1n << 80n }) },
  { weight: 2, arbitrary: fc.oneof(fc.double(), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), text) },
  { weight: 1, arbitrary: fc.array(fc.oneof(fc.integer(), fc.double(), fc.maxSafeNat()), { maxLength: 6 }) },
  { weight: 1, arbitrary: validControl },
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

/** Edits of a body: what 0 deletes, 2 adds a field, others replace (field: which one). */
type FieldEdit = [field: number, what: number, value: unknown];
const fieldEdits = fc.array(fc.tuple(fc.nat(), fc.nat(4), junk), { minLength: 1, maxLength: 3 });

/** The application record, or a failure notice's [lost, reason], with edits a broken peer might make. */
function editBody(record: WireRecord, edits: FieldEdit[]): unknown {
  if (record.kind === Kind.Failed) {
    const texts: unknown[] = [record.lost, record.reason];
    for (const [field, what, value] of edits) {
      if (what === 0) texts.splice(field % (texts.length + 1), 1);
      else if (what === 2) texts.push(value);
      else texts[field % 2] = value;
    }
    return texts;
  }
  const control = (record as { record: RingControl }).record;
  const into: Record<string, unknown> = { ...control };
  if (control.type === 'RESIZE_CHAIN') into.ranges = control.ranges.map((x) => ({ ...x }));
  const fields = CONTROL_FIELDS[control.type];
  for (const [field, what, value] of edits) {
    const name = fields[field % fields.length];
    if (name === 'ranges' && what >= 3 && Array.isArray(into.ranges) && into.ranges.length > 0) {
      // One range of the wrong type or shape among good ones.
      const ranges = into.ranges as Record<string, unknown>[];
      const at = field % ranges.length;
      if (what === 3) ranges[at] = value as Record<string, unknown>;
      else ranges[at] = { ...ranges[at], [['start', 'end', 'extra'][field % 3]]: value };
    } else if (what === 0) delete into[name];
    else if (what === 2) into[`extra${field % 7}`] = value;
    else into[name] = value;
  }
  return into;
}

/** A record of `kind` whose body is `body`, with a valid header (fields from `seed`). */
function withBody(kind: Kind, seed: number, body: Uint8Array): Uint8Array {
  return packRecord(kind, seed % 7, seed % 3, 0x100 * (seed % 5), kind === Kind.Around ? seed % 11 : 0, kind === Kind.Around ? seed % 3 : 0, body);
}
const BODY_KINDS = [Kind.Around, Kind.Direct, Kind.Failed];

/** A header of any kind (valid or not) with random fields, then msgpack-like bytes. */
const arbitraryBytes = fc.oneof(
  fc.uint8Array({ maxLength: 64 }),
  fc
    .tuple(fc.nat(7), fc.uint8Array({ minLength: 28, maxLength: 28 }), fc.nat(3), msgpackLike([0x81, 0x82, 0x83, 0x84, 0x92, 0xdc, 0xde, 0xc7, 0xd4, 0xd5, 0xc9]))
    .map(([kind, fields, zeroes, body]) => {
      const head = Uint8Array.from([0x52, 0x4b, 1, kind, ...fields]);
      // Fields mostly small, the reserved word mostly 0: the parse goes past the header.
      if (zeroes > 0) head.fill(0, 16, 24);
      if (zeroes > 1) head.fill(0, 5, 8).fill(0, 9, 16).fill(0, 26, 32);
      return Uint8Array.from([...head, ...(kind === Kind.Joined || kind === Kind.Ack ? [] : body)]);
    }),
);

describe('control records: decodeRecord', () => {
  fuzz(
    'every kind of valid record round-trips',
    8_000,
    validRecord,
    (record) => {
      const bytes = encodeRecord(record);
      const back = decodeRecord(inView(bytes));
      const { body, ...fields } = back as WireRecord & { body?: Uint8Array };
      if (!isDeepStrictEqual(fields, record)) fail('round trip changed the record', { record, back });
      if (record.kind === Kind.Around && !isDeepStrictEqual(Buffer.from(body!), Buffer.from(bytes.subarray(RECORD_HEADER_BYTES)))) fail('the body is not what was sent', back);
      assertRecord(back);
    },
    (record) => hex(encodeRecord(record)),
  );

  fuzz('arbitrary bytes', 12_000, arbitraryBytes.map((b) => inView(b)), checkBytes, hex);

  const packed = fc.tuple(fc.constantFrom(...BODY_KINDS), fc.nat(), junk, fc.nat(2)).map(([kind, seed, v, packer]) => inView(withBody(kind, seed, packWith(packer, v))));
  fuzz('anything a peer could pack as a body', 8_000, packed, checkBytes, hex);

  const edited = fc
    .tuple(validRecord.filter((r) => r.kind === Kind.Around || r.kind === Kind.Direct || r.kind === Kind.Failed), fieldEdits, fc.nat(2), fc.nat())
    .map(([r, edits, packer, seed]) => inView(withBody(r.kind, seed, packWith(packer, editBody(r, edits)))));
  fuzz('valid bodies with fields missing, added, or of the wrong type or range', 12_000, edited, checkBytes, hex);

  const mutated = fc.tuple(validRecord, byteEdits).map(([r, edits]) => mutateBytes(encodeRecord(r), edits));
  fuzz('valid records with their bytes mutated', 12_000, mutated, checkBytes, hex);
});

describe('control records: edges', () => {
  const base = { gen: 0, fromRank: 0, base: 0x100 };
  test('texts of exactly 4096 characters are accepted, 4097 refused', () => {
    const ok = { ...base, kind: Kind.Failed, lost: 'x'.repeat(MAX_TEXT), reason: 'y'.repeat(MAX_TEXT) } as WireRecord;
    expect(decodeRecord(encodeRecord(ok))).toEqual(ok);
    expectThrows(() => decodeRecord(withBody(Kind.Failed, 0, packValue([LONG, 'r']))), PROTOCOL, /lost must be a string of at most 4096/);
    expectThrows(() => decodeRecord(withBody(Kind.Failed, 0, packValue(['l', LONG]))), PROTOCOL, /reason must be a string of at most 4096/);
  });

  test(`RESIZE_CHAIN of ${MAX_RANKS} ranges is accepted, one more refused`, () => {
    const ranges = Array.from({ length: MAX_RANKS }, (_, i) => ({ start: i, end: i + 1 }));
    const ok = { ...base, kind: Kind.Direct, record: { type: 'RESIZE_CHAIN', ranges } } as WireRecord;
    expect(isDeepStrictEqual(decodeRecord(encodeRecord(ok)), ok)).toBe(true); // not toEqual: 65,536 ranges
    const over = withBody(Kind.Direct, 0, packValue({ type: 'RESIZE_CHAIN', ranges: HUGE_RANGES }));
    expectThrows(() => decodeRecord(over), PROTOCOL, /ranges must be an array of at most 65536/);
  });

  test('a header that is short, foreign, of another version, or with fields its kind has not: refused, naming why', () => {
    const ack = encodeRecord({ ...base, kind: Kind.Ack, id: 1 });
    const edit = (at: number, value: number, bytes = ack): Uint8Array => {
      const b = bytes.slice();
      b[at] = value;
      return b;
    };
    const cases: [Uint8Array, RegExp][] = [
      [ack.subarray(0, RECORD_HEADER_BYTES - 1), /31 bytes, shorter than the 32-byte header/],
      [edit(0, 0x53), /no record magic/],
      [edit(2, 2), /version 2, not 1/],
      [edit(3, 6), /unknown kind 6/],
      [edit(3, 0), /unknown kind 0/],
      [edit(20, 1), /reserved bytes are not 0/],
      [edit(31, 0x01), /base is 2\^53 or more/],
      [edit(16, 1), /an ack has an origin or a body/],
      [Uint8Array.from([...ack, 0xc0]), /an ack has an origin or a body/],
      [edit(12, 1, encodeRecord({ ...base, kind: Kind.Joined })), /a join notice has an id, an origin or a body/],
      [edit(12, 1, encodeRecord({ ...base, kind: Kind.Direct, record: { type: 'CONTROL', body: 1 } })), /a direct record has an id or an origin/],
      [edit(16, 1, encodeRecord({ ...base, kind: Kind.Failed, lost: 'a', reason: 'b' })), /a failure notice has an id or an origin/],
    ];
    for (const [bytes, message] of cases) expectThrows(() => decodeRecord(bytes), PROTOCOL, message);
    // The largest base that fits is accepted.
    const top = encodeRecord({ ...base, base: Number.MAX_SAFE_INTEGER, kind: Kind.Joined });
    expect(decodeRecord(top)).toEqual({ ...base, base: Number.MAX_SAFE_INTEGER, kind: Kind.Joined });
    expect(() => encodeRecord({ ...base, gen: 2 ** 32, kind: Kind.Joined })).toThrow(RangeError);
  });

  test('bodies with missing, extra and mistyped fields are refused, naming the field', () => {
    const cases: [Kind, unknown, RegExp][] = [
      [Kind.Direct, { type: 'CONTROL', body: 1, more: 2 }, /CONTROL has an unknown field "more"/],
      [Kind.Around, { type: 'RESIZE_LAYERS', rank: 0, start: 2, end: 1, isTail: true }, /end is before its start/],
      [Kind.Around, { type: 'RESIZE_LAYERS', rank: -1, start: 0, end: 1, isTail: true }, /rank must be a non-negative integer/],
      [Kind.Direct, [1, 2, 3], /a control record must be an object with a type/],
      [Kind.Direct, null, /a control record must be an object with a type/],
      [Kind.Failed, ['a'], /a failure notice's body must be \[lost, reason\]/],
      [Kind.Failed, { lost: 'a', reason: 'b' }, /a failure notice's body must be \[lost, reason\]/],
      [Kind.Failed, [7, 'b'], /lost must be a string/],
    ];
    for (const [kind, value, message] of cases) expectThrows(() => decodeRecord(withBody(kind, 0, packValue(value))), PROTOCOL, message);
    expectThrows(() => decodeRecord(withBody(Kind.Direct, 0, new Uint8Array(0))), PROTOCOL);
    expectThrows(() => decodeRecord(withBody(Kind.Direct, 0, fromHex('c1'))), PROTOCOL);
  });

  test('a "__proto__" key sets no prototype: its fields are not the record\'s', () => {
    const nested = withBody(Kind.Direct, 0, packValue(JSON.parse('{"__proto__":{"type":"CONTROL","body":1}}')));
    expectThrows(() => decodeRecord(nested), PROTOCOL, /unknown control type/);
  });

  test('a CONTROL body nested deeper than the stack allows: refused, not a RangeError', () => {
    // Each 0x91 opens an array of one item: 100,000 of them in 100 KB.
    const prefix = packValue({ type: 'CONTROL', body: 0 });
    const deep = new Uint8Array(prefix.length - 1 + 100_000 + 1);
    deep.set(prefix.subarray(0, prefix.length - 1));
    deep.fill(0x91, prefix.length - 1, prefix.length - 1 + 100_000);
    deep[deep.length - 1] = 0x00;
    checkBytes(withBody(Kind.Direct, 0, deep));
  });
});

// ---- inputs the fuzz found: each was refused with the wrong error before its fix

describe('inputs the fuzz found', () => {
  test('a control type whose toString is no function: refused, not a TypeError', () => {
    // {type: {toString: 1}}
    const bytes = withBody(Kind.Direct, 0, fromHex('de0001a474797065de0001a8746f537472696e6701'));
    expectThrows(() => decodeRecord(bytes), PROTOCOL, /unknown control type "object"/);
  });

  test('a CONTROL body our encoder cannot encode again (a bigint below -2^63): refused, not a RangeError later', () => {
    // {type: 'CONTROL', body: -(2n ** 63n) - 1n}, the body as msgpackr's bigint extension (0x42)
    const bytes = withBody(Kind.Around, 0, fromHex('de0002a474797065a7434f4e54524f4ca4626f6479d842ffffffffffffffff7fffffffffffffff'));
    expectThrows(() => decodeRecord(bytes), PROTOCOL, /CONTROL\.body cannot be encoded again/);
  });

  test('CONTROL bodies our encoder would carry as something else (msgpackr Set and Float32Array extensions): refused', () => {
    const head = 'de0002a474797065a7434f4e54524f4ca4626f6479';
    for (const body of ['d473009101', 'c70574070000c03f']) {
      expectThrows(() => decodeRecord(withBody(Kind.Direct, 0, fromHex(head + body))), PROTOCOL, /CONTROL\.body changes when encoded again/);
    }
    // The same record with a plain body is accepted.
    expect(decodeRecord(withBody(Kind.Direct, 0, fromHex(head + '9101')))).toEqual({ gen: 0, fromRank: 0, base: 0, kind: Kind.Direct, record: { type: 'CONTROL', body: [1] } });
  });
});
