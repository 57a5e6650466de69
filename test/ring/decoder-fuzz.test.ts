// Property-based fuzz of the ring's control record decoder (peer bytes): each input is refused with
// ERR_RVMA_PROTOCOL or decodes to a value the ring relies on and re-encodes unchanged.
// RVMA_FUZZ_SEED=<n> replays. Data frames and credit records are decoded natively: libFuzzer
// harness test/fuzz/fuzz_ring.cpp.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { Kind, MAX_RANKS, RingControl, WireRecord, checkControl, decodeRecord, encodeRecord } from '../../src/ring/records';
import { packValue } from '../../src/tensor/codec';
import { expectThrows } from '../helpers/errors';
import { assertRefusal, byteEdits, fail, fromHex, fuzzer, hex, inView, msgpackLike, mutateBytes, printable } from '../helpers/fuzz';

const PROTOCOL = 'ERR_RVMA_PROTOCOL';
const MAX_TEXT = 4096;

const { fuzz } = fuzzer('test/ring/decoder-fuzz', 0x71e6);


// ---- control records: decodeRecord

const COMMON = ['gen', 'from', 'fromRank', 'base', 'kind'];
const FIELDS: Record<number, string[]> = {
  [Kind.Joined]: COMMON,
  [Kind.Around]: [...COMMON, 'id', 'origin', 'record'],
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
  if (!isIndex(r.gen) || !isIndex(r.fromRank) || !isIndex(r.base) || !isText(r.from)) fail('bad header', r);
  switch (r.kind) {
    case Kind.Joined:
      return;
    case Kind.Around:
      if (!isIndex(r.id) || !isIndex(r.origin)) fail('bad around', r);
      return assertControl(r.record);
    case Kind.Ack:
      if (!isIndex(r.id)) fail('bad ack', r);
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
  const again = decodeRecord(encodeRecord(record));
  if (!isDeepStrictEqual(again, record)) fail('re-encoding changed the record', { record, again });
  if ('record' in record && !isDeepStrictEqual(checkControl(record.record), record.record)) fail('checkControl changes a decoded record', record);
}

// ---- generators: valid records

const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 16 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(MAX_TEXT), '\u{10000}'.repeat(MAX_TEXT / 2), '') },
);
const index = fc.oneof(fc.nat(1000), fc.maxSafeNat());
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
const header = { gen: index, from: text, fromRank: index, base: index };
const validRecord: fc.Arbitrary<WireRecord> = fc.oneof(
  fc.record(header).map((r) => ({ ...r, kind: Kind.Joined as const })),
  fc.record({ ...header, id: index, origin: index, record: validControl }).map((r) => ({ ...r, kind: Kind.Around as const })),
  fc.record({ ...header, id: index }).map((r) => ({ ...r, kind: Kind.Ack as const })),
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

/** Target 1 is the nested application record (when there is one); what 0 deletes, 2 adds a field, others replace. */
type FieldEdit = [target: number, field: number, what: number, value: unknown];
const fieldEdits = fc.array(fc.tuple(fc.nat(3), fc.nat(), fc.nat(4), junk), { minLength: 1, maxLength: 3 });

function editRecord(record: WireRecord, edits: FieldEdit[]): Record<string, unknown> {
  const r: Record<string, unknown> = { ...record };
  const nestedRecord = 'record' in record ? { ...record.record } : undefined;
  if (nestedRecord) r.record = nestedRecord;
  if (nestedRecord?.type === 'RESIZE_CHAIN') nestedRecord.ranges = nestedRecord.ranges.map((x) => ({ ...x }));
  const ordered = [...edits.filter((e) => e[0] === 1), ...edits.filter((e) => e[0] !== 1)];
  for (const [target, field, what, value] of ordered) {
    const nested = target === 1 && nestedRecord !== undefined;
    const into = (nested ? nestedRecord : r) as Record<string, unknown>;
    const fields = nested ? CONTROL_FIELDS[(record as { record: RingControl }).record.type] : FIELDS[record.kind];
    const name = fields[field % fields.length];
    if (nested && name === 'ranges' && what >= 3 && Array.isArray(into.ranges) && into.ranges.length > 0) {
      // One range of the wrong type or shape among good ones.
      const ranges = into.ranges as Record<string, unknown>[];
      const at = field % ranges.length;
      if (what === 3) ranges[at] = value as Record<string, unknown>;
      else ranges[at] = { ...ranges[at], [['start', 'end', 'extra'][field % 3]]: value };
    } else if (what === 0) delete into[name];
    else if (what === 2) into[`extra${field % 7}`] = value;
    else into[name] = value;
  }
  return r;
}


const arbitraryBytes = msgpackLike([0x84, 0x85, 0x86, 0x87, 0xde, 0xdf, 0x92, 0xdc, 0xc7, 0xd4, 0xd5, 0xc9]);

describe('control records: decodeRecord', () => {
  fuzz(
    'every kind of valid record round-trips',
    8_000,
    validRecord,
    (record) => {
      const back = decodeRecord(inView(encodeRecord(record)));
      if (!isDeepStrictEqual(back, record)) fail('round trip changed the record', { record, back });
      assertRecord(back);
    },
    (record) => hex(encodeRecord(record)),
  );

  fuzz('arbitrary bytes', 12_000, arbitraryBytes.map((b) => inView(b)), checkBytes, hex);

  fuzz('anything a peer could pack', 8_000, fc.tuple(junk, fc.nat(2)).map(([v, packer]) => inView(packWith(packer, v))), checkBytes, hex);

  const edited = fc
    .tuple(validRecord, fieldEdits, fc.nat(2))
    .map(([r, edits, packer]) => inView(packWith(packer, editRecord(r, edits))));
  fuzz('valid records with fields missing, added, or of the wrong type or range', 12_000, edited, checkBytes, hex);

  const mutated = fc.tuple(validRecord, byteEdits).map(([r, edits]) => mutateBytes(encodeRecord(r), edits));
  fuzz('valid records with their bytes mutated', 12_000, mutated, checkBytes, hex);
});

describe('control records: edges', () => {
  const base = { gen: 0, from: 'a', fromRank: 0, base: 0x100 };
  test('texts of exactly 4096 characters are accepted, 4097 refused', () => {
    const ok = { ...base, kind: Kind.Failed, lost: 'x'.repeat(MAX_TEXT), reason: 'y'.repeat(MAX_TEXT) } as WireRecord;
    expect(decodeRecord(encodeRecord(ok))).toEqual(ok);
    for (const field of ['from', 'lost', 'reason']) {
      expectThrows(() => decodeRecord(packValue({ ...ok, [field]: LONG })), PROTOCOL, new RegExp(`${field} must be a string of at most 4096`));
    }
  });

  test(`RESIZE_CHAIN of ${MAX_RANKS} ranges is accepted, one more refused`, () => {
    const ranges = Array.from({ length: MAX_RANKS }, (_, i) => ({ start: i, end: i + 1 }));
    const ok = { ...base, kind: Kind.Direct, record: { type: 'RESIZE_CHAIN', ranges } } as WireRecord;
    expect(isDeepStrictEqual(decodeRecord(encodeRecord(ok)), ok)).toBe(true); // not toEqual: 65,536 ranges
    const over = { ...base, kind: Kind.Direct, record: { type: 'RESIZE_CHAIN', ranges: HUGE_RANGES } };
    expectThrows(() => decodeRecord(packValue(over)), PROTOCOL, /ranges must be an array of at most 65536/);
  });

  test('missing, extra and mistyped fields are refused, naming the field', () => {
    const joined = { ...base, kind: Kind.Joined };
    const ack = { ...base, kind: Kind.Ack, id: 1 };
    const cases: [unknown, RegExp][] = [
      [{ ...joined, extra: 1 }, /a join notice has an unknown field "extra"/],
      [{ ...ack, id: undefined }, /id must be a non-negative integer/],
      [{ ...ack, id: -1 }, /id must be a non-negative integer/],
      [{ ...joined, gen: 1.5 }, /gen must be a non-negative integer/],
      [{ ...joined, gen: 2 ** 53 }, /gen must be a non-negative integer/],
      [{ ...joined, from: 7 }, /from must be a string/],
      [{ ...joined, kind: 6 }, /unknown kind 6/],
      [{ ...joined, kind: '1' }, /unknown kind 1/],
      [{ ...base, kind: Kind.Ack }, /an ack lacks "id"/],
      [{ ...base, kind: Kind.Direct, record: { type: 'CONTROL', body: 1, more: 2 } }, /CONTROL has an unknown field "more"/],
      [
        { ...base, kind: Kind.Around, id: 1, origin: 0, record: { type: 'RESIZE_LAYERS', rank: 0, start: 2, end: 1, isTail: true } },
        /end is before its start/,
      ],
      [[1, 2, 3], /not a map/],
      [null, /not a map/],
    ];
    for (const [value, message] of cases) expectThrows(() => decodeRecord(packValue(value)), PROTOCOL, message);
    expectThrows(() => decodeRecord(new Uint8Array(0)), PROTOCOL);
    expectThrows(() => decodeRecord(fromHex('c1')), PROTOCOL);
  });

  test('a "__proto__" key sets no prototype: its fields are not the record\'s', () => {
    const inner = { ...base, kind: Kind.Ack, id: 1 };
    const bytes = packValue(JSON.parse(`{"__proto__":${JSON.stringify(inner)}}`));
    expectThrows(() => decodeRecord(bytes), PROTOCOL, /gen must be a non-negative integer/);
    const nested = packValue({ ...base, kind: Kind.Direct, record: JSON.parse('{"__proto__":{"type":"CONTROL","body":1}}') });
    expectThrows(() => decodeRecord(nested), PROTOCOL, /unknown control type/);
  });

  test('a CONTROL body nested deeper than the stack allows: refused, not a RangeError', () => {
    // Each 0x91 opens an array of one item: 100,000 of them in 100 KB.
    const prefix = packValue({ ...base, kind: Kind.Direct, record: { type: 'CONTROL', body: 0 } });
    const deep = new Uint8Array(prefix.length - 1 + 100_000 + 1);
    deep.set(prefix.subarray(0, prefix.length - 1));
    deep.fill(0x91, prefix.length - 1, prefix.length - 1 + 100_000);
    deep[deep.length - 1] = 0x00;
    checkBytes(deep);
  });
});

// ---- inputs the fuzz found: each was refused with the wrong error before its fix

describe('inputs the fuzz found', () => {
  test('a kind whose toString is no function: refused, not a TypeError from describing it', () => {
    // {gen: 0, from: '', fromRank: 0, base: 0, record: {type: 'RESIZE_CHAIN', ranges: []}, kind: {valueOf: 1, toString: 1}}
    const bytes = fromHex(
      'de0006a367656e00a466726f6da0a866726f6d52616e6b00a46261736500a67265636f7264de0002a474797065ac524553495a455f434841494ea672616e67' +
        '657390a46b696e64de0002a776616c75654f6601a8746f537472696e6701',
    );
    expectThrows(() => decodeRecord(bytes), PROTOCOL, /unknown kind object/);
  });

  test('a control type whose toString is no function: refused, not a TypeError', () => {
    // {gen: 0, from: '', fromRank: 0, base: 0, kind: 4, record: {type: {toString: 1}}}
    const bytes = fromHex('de0006a367656e00a466726f6da0a866726f6d52616e6b00a46261736500a46b696e6404a67265636f7264de0001a474797065de0001a8746f537472696e6701');
    expectThrows(() => decodeRecord(bytes), PROTOCOL, /unknown control type "object"/);
  });

  test('a CONTROL body our encoder cannot encode again (a bigint below -2^63): refused, not a RangeError at pass()', () => {
    // {gen: 0, from: '', fromRank: 0, base: 0, id: 0, origin: 0, record: {type: 'CONTROL', body: -(2n ** 63n) - 1n}, kind: 2},
    // the body as msgpackr's bigint extension (0x42)
    const bytes = fromHex(
      'de0008a367656e00a466726f6da0a866726f6d52616e6b00a46261736500a2696400a66f726967696e00a67265636f7264de0002a474797065a7434f4e54' +
        '524f4ca4626f6479d842ffffffffffffffff7fffffffffffffffa46b696e6402',
    );
    expectThrows(() => decodeRecord(bytes), PROTOCOL, /CONTROL\.body cannot be encoded again/);
  });

  test('CONTROL bodies our encoder would carry as something else (msgpackr Set and Float32Array extensions): refused', () => {
    const head = 'de0006a367656e00a466726f6da0a866726f6d52616e6b00a46261736500a46b696e6404a67265636f7264de0002a474797065a7434f4e54524f4ca4626f6479';
    for (const body of ['d473009101', 'c70574070000c03f']) {
      expectThrows(() => decodeRecord(fromHex(head + body)), PROTOCOL, /CONTROL\.body changes when encoded again/);
    }
    // The same record with a plain body is accepted.
    expect(decodeRecord(fromHex(head + '9101'))).toEqual({ gen: 0, from: '', fromRank: 0, base: 0, kind: Kind.Direct, record: { type: 'CONTROL', body: [1] } });
  });
});
