// Rendezvous keys in TensorFlow's format: what createKey builds parseKey reads back, and a
// malformed key is refused with a message that names the part that is wrong.
import { createKey, parseKey, taskOf } from '../../src';
import { normalKey } from '../../src/rendezvous/key';
import { expectThrows } from '../helpers/errors';

const INVALID = 'ERR_RVMA_INVALID_ARGUMENT';
const SRC = '/job:worker/replica:0/task:0/device:CPU:0';
const DST = '/job:ps/replica:2/task:13/device:GPU:1';
const loose = (value: unknown) => value as never;

describe('createKey / parseKey', () => {
  test('round trip: every part comes back, with the tasks split off the devices', () => {
    const key = createKey(SRC, 0xdeadbeef01n, DST, 'layer_3/weights:0', { frameId: 4, iterId: 17 });
    expect(key).toBe(`${SRC};000000deadbeef01;${DST};layer_3/weights:0;4:17`);
    expect(parseKey(key)).toEqual({
      srcDevice: SRC,
      srcIncarnation: '000000deadbeef01',
      dstDevice: DST,
      name: 'layer_3/weights:0',
      frameId: 4,
      iterId: 17,
      srcTask: '/job:worker/replica:0/task:0',
      dstTask: '/job:ps/replica:2/task:13',
    });
  });

  test('frame and iteration default to 0:0; a hex string incarnation is lowercased', () => {
    const key = createKey(SRC, '00AbCdEf00000001', DST, 't');
    expect(key).toBe(`${SRC};00abcdef00000001;${DST};t;0:0`);
    const parsed = parseKey(key);
    expect(parsed.srcIncarnation).toBe('00abcdef00000001');
    expect([parsed.frameId, parsed.iterId]).toEqual([0, 0]);
  });

  // TensorFlow's RendezvousTest.Key: the incarnation is 16 hex digits, zero-padded (FpToString).
  test("TensorFlow's key: CreateKey(/job:mnist/replica:1/task:2/CPU:0, 7890, /job:mnist/replica:1/task:2/device:GPU:0, var0, 0:0)", () => {
    const key = createKey('/job:mnist/replica:1/task:2/CPU:0', 7890n, '/job:mnist/replica:1/task:2/device:GPU:0', 'var0', { frameId: 0, iterId: 0 });
    expect(key).toBe('/job:mnist/replica:1/task:2/CPU:0;0000000000001ed2;/job:mnist/replica:1/task:2/device:GPU:0;var0;0:0');
  });

  test('every spelling of one incarnation makes one key, and parseKey reads back the same incarnation', () => {
    const forms = [0x1ed2n, '1ed2', '1ED2', '0000000000001ed2', '001ed2'];
    const keys = new Set(forms.map((f) => createKey(SRC, f, DST, 'x')));
    expect(keys.size).toBe(1);
    for (const f of forms) {
      expect(parseKey(createKey(SRC, f, DST, 'x')).srcIncarnation).toBe('0000000000001ed2');
      expect(parseKey(`${SRC};${typeof f === 'bigint' ? f.toString(16) : f};${DST};x;0:0`).srcIncarnation).toBe('0000000000001ed2');
    }
    // An endpoint incarnation that starts with 0 (1 in 16): its bigint form gives the same key.
    const incarnation = '0f00000000000001';
    expect(createKey(SRC, BigInt(`0x${incarnation}`), DST, 'x')).toBe(createKey(SRC, incarnation, DST, 'x'));
  });

  test('incarnations beyond 64 bits are refused', () => {
    expectThrows(() => createKey(SRC, 1n << 64n, DST, 'x'), INVALID, /srcIncarnation/);
    expectThrows(() => createKey(SRC, '1'.repeat(17), DST, 'x'), INVALID, /srcIncarnation/);
    expectThrows(() => parseKey(`${SRC};${'1'.repeat(17)};${DST};x;0:0`), INVALID, /src_incarnation/);
  });

  test('a bigint incarnation and the same hex string give the same key', () => {
    const incarnation = (1n << 64n) - 1n;
    expect(createKey(SRC, incarnation, DST, 'x')).toBe(createKey(SRC, 'ffffffffffffffff', DST, 'x'));
  });

  test('a device in the short form (/cpu:0) belongs to its task', () => {
    const short = '/job:worker/replica:0/task:4/cpu:0';
    expect(parseKey(createKey(SRC, 1n, short, 'n')).dstTask).toBe('/job:worker/replica:0/task:4');
  });

  test('a bare task is a valid device and is its own task', () => {
    // parseKey accepts devices without a device part; their task must be the whole name.
    const bare = '/job:worker/replica:0/task:3';
    const parsed = parseKey(createKey(bare, 1n, DST, 'n'));
    expect(parsed.srcDevice).toBe(bare);
    expect(parsed.srcTask).toBe(bare);
  });

  test('taskOf strips the device part', () => {
    expect(taskOf('/job:a/replica:0/task:1/device:CPU:0')).toBe('/job:a/replica:0/task:1');
    expect(taskOf('/job:a/replica:0/task:1/GPU:2')).toBe('/job:a/replica:0/task:1');
  });

  test('taskOf leaves a bare task whole', () => {
    expect(taskOf('/job:a/replica:0/task:1')).toBe('/job:a/replica:0/task:1');
  });
});

describe('parseKey refuses malformed keys, naming the bad part', () => {
  const good = [SRC, 'abc123', DST, 'tensor', '0:0'];
  const withPart = (i: number, value: string) => good.map((p, j) => (j === i ? value : p)).join(';');

  test.each<[string, string, RegExp]>([
    ['4 parts', good.slice(0, 4).join(';'), /5 parts.*got 4/],
    ['6 parts (a ";" inside the name)', withPart(3, 'a;b'), /5 parts.*got 6/],
    ['1 part', 'justaname', /5 parts.*got 1/],
    ['empty key', '', /5 parts.*got 1/],
    ['src_device without a job', withPart(0, '/replica:0/task:0'), /src_device/],
    ['src_device with a bad task', withPart(0, '/job:w/replica:0/task:x'), /src_device/],
    ['src_incarnation not hex', withPart(1, 'xyz'), /src_incarnation/],
    ['src_incarnation empty', withPart(1, ''), /src_incarnation/],
    ['src_incarnation with a 0x prefix', withPart(1, '0x12'), /src_incarnation/],
    ['dst_device empty', withPart(2, ''), /dst_device/],
    ['dst_device missing replica', withPart(2, '/job:w/task:1'), /dst_device/],
    ['tensor_name empty', withPart(3, ''), /tensor_name/],
    ['frame_id:iter_id without colon', withPart(4, '0'), /frame_id:iter_id/],
    ['frame_id:iter_id not numbers', withPart(4, 'a:b'), /frame_id:iter_id/],
    ['frame_id:iter_id negative', withPart(4, '-1:0'), /frame_id:iter_id/],
    ['frame_id:iter_id three numbers', withPart(4, '0:1:2'), /frame_id:iter_id/],
  ])('%s', (_, key, message) => {
    expectThrows(() => parseKey(key), INVALID, message);
  });

  test('a non-string key', () => {
    expectThrows(() => parseKey(loose(42)), INVALID, /key must be a string/);
  });

  test('the message starts with the call', () => {
    expectThrows(() => parseKey(withPart(1, 'zz')), INVALID, /^parseKey: /);
  });
});

describe('createKey refuses what would not parse back', () => {
  test.each<[string, () => string, RegExp]>([
    ['bad source device', () => createKey('cpu:0', 1n, DST, 'n'), /srcDevice/],
    ['bad destination device', () => createKey(SRC, 1n, '/job:x', 'n'), /dstDevice/],
    ['non-hex incarnation', () => createKey(SRC, 'nothex', DST, 'n'), /srcIncarnation/],
    ['empty name', () => createKey(SRC, 1n, DST, ''), /name/],
    ['";" in the name', () => createKey(SRC, 1n, DST, 'a;b'), /name/],
    ['negative frame', () => createKey(SRC, 1n, DST, 'n', { frameId: -1, iterId: 0 }), /frameIter/],
    ['fractional iteration', () => createKey(SRC, 1n, DST, 'n', { frameId: 0, iterId: 0.5 }), /frameIter/],
  ])('%s', (_, call, message) => {
    expectThrows(call, INVALID, message);
  });
});

describe('normalKey (the parsed keys the rendezvous keeps)', () => {
  test('every spelling maps to the one key, again and again, and a bad key is refused each time', () => {
    const spellings = ['1ed2', '1ED2', '0000000000001ed2'].map((i) => `${SRC};${i};${DST};x;0:0`);
    for (let round = 0; round < 3; round++) {
      for (const s of spellings) {
        const { parsed, key } = normalKey(s);
        expect(key).toBe(createKey(SRC, 0x1ed2n, DST, 'x'));
        expect(parsed).toEqual(parseKey(s));
      }
      expectThrows(() => normalKey(`${SRC};zz;${DST};x;0:0`), INVALID, /src_incarnation/);
    }
  });

  test('more keys than it keeps, and keys too long to keep, still parse right', () => {
    const long = 'n'.repeat(600);
    for (let i = 0; i < 5000; i++) {
      const name = i % 100 === 0 ? `${long}${i}` : `t${i}`;
      const raw = `${SRC};${(i + 1).toString(16)};${DST};${name};0:${i}`;
      expect(normalKey(raw).key).toBe(createKey(SRC, BigInt(i + 1), DST, name, { frameId: 0, iterId: i }));
    }
  });
});
