// Argument checking of the public API: every bad argument is an RvmaError with code
// ERR_RVMA_INVALID_ARGUMENT whose message names the call and the argument, and a refused
// call has no effect. Promise-returning calls reject rather than throw.
import { Endpoint, type Mailbox, type PutOptions } from '../../src';
import { VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectFails, expectRejects, expectThrows } from '../helpers/errors';

const endpoints = trackEndpoints();
const U64_LIMIT = 1n << 64n;
const INVALID = 'ERR_RVMA_INVALID_ARGUMENT';

/** Lets a test pass values the types forbid. */
const loose = (value: unknown) => value as never;

function names(call: string, argument: string): RegExp {
  return new RegExp(`^${call.replace('.', '\\.')}: .*${argument}`);
}

describe('Endpoint.create', () => {
  test.each<[string, unknown, string]>([
    ['null options', null, 'options'],
    ['string options', 'loop', 'options'],
    ['array options', [], 'options'],
    ['unknown key', { nodeID: 'x' }, 'nodeID'],
    ['empty nodeId', { nodeId: '' }, 'nodeId'],
    ['numeric nodeId', { nodeId: 5 }, 'nodeId'],
    ['unknown progress', { progress: 'busy' }, 'progress'],
    ['numeric progress', { progress: 1 }, 'progress'],
    ['unknown provider', { provider: 'carrier-pigeon' }, 'provider'],
    ['verbs.slots 0', { verbs: { slots: 0 } }, 'verbs\\.slots'],
    ['verbs.slots above 1024', { verbs: { slots: 1025 } }, 'verbs\\.slots'],
    ['verbs.slotBytes below 64', { verbs: { slotBytes: 63 } }, 'verbs\\.slotBytes'],
    ['verbs.slotBytes above 16 MiB', { verbs: { slotBytes: 2 ** 24 + 1 } }, 'verbs\\.slotBytes'],
    ['verbs.receiveDepth below 8', { verbs: { receiveDepth: 7 } }, 'verbs\\.receiveDepth'],
    ['verbs.receiveDepth above 65536', { verbs: { receiveDepth: 65537 } }, 'verbs\\.receiveDepth'],
    ['fractional verbs.receiveDepth', { verbs: { receiveDepth: 64.5 } }, 'verbs\\.receiveDepth'],
    ['fractional verbs.maxPutBytes', { verbs: { maxPutBytes: 1.5 } }, 'verbs\\.maxPutBytes'],
    ['string verbs.connectTimeoutMs', { verbs: { connectTimeoutMs: '5000' } }, 'verbs\\.connectTimeoutMs'],
    ['verbs.busyPollUs above 100000', { progress: 'thread', verbs: { busyPollUs: 100_001 } }, 'verbs\\.busyPollUs'],
    ['verbs.busyPollUs with loop progress', { verbs: { busyPollUs: 50 } }, 'verbs\\.busyPollUs'],
    ['negative verbs.registrationCacheBytes', { verbs: { registrationCacheBytes: -1 } }, 'verbs\\.registrationCacheBytes'],
    ['verbs.keepaliveMs not below peerTimeoutMs', { verbs: { keepaliveMs: 500, peerTimeoutMs: 500 } }, 'verbs\\.keepaliveMs'],
    ['verbs.keepaliveMs above the default peerTimeoutMs', { verbs: { keepaliveMs: 6000 } }, 'verbs\\.keepaliveMs'],
    ['negative tcp.reconnectMs', { tcp: { reconnectMs: -1 } }, 'tcp\\.reconnectMs'],
    ['fractional tcp.reconnectMs', { tcp: { reconnectMs: 2.5 } }, 'tcp\\.reconnectMs'],
    ['tcp.reconnectMs above 2^31 - 1', { tcp: { reconnectMs: 2 ** 31 } }, 'tcp\\.reconnectMs'],
    ['string tcp.reconnectMs', { tcp: { reconnectMs: '3000' } }, 'tcp\\.reconnectMs'],
  ])('%s', async (_, options, argument) => {
    await expectFails(() => Endpoint.create(loose(options)), INVALID, names('Endpoint.create', argument));
  });

  test.each<[string, unknown, string]>([
    ['verbs not an object', { verbs: 64 }, 'options must be an object'],
    ['unknown verbs key', { verbs: { eagerBytes: 100 } }, 'unknown option "eagerBytes"'],
  ])('%s', async (_, options, what) => {
    await expectFails(() => Endpoint.create(loose(options)), INVALID, new RegExp(`^Endpoint\\.create verbs: ${what}`));
  });

  test('an unknown tcp key is refused; tcp.reconnectMs 0 (no reconnecting) is accepted', async () => {
    await expectFails(() => Endpoint.create(loose({ tcp: { reconnectMS: 100 } })), INVALID, /^Endpoint\.create tcp: .*reconnectMS/);
    await endpoints.create({ tcp: { reconnectMs: 0 } });
  });

  test('a node id already used by an open endpoint', async () => {
    const first = await endpoints.create();
    await expectRejects(Endpoint.create({ nodeId: first.nodeId }), INVALID, names('Endpoint.create', '(nodeId|node id)'));
  });
});

describe('Endpoint.openMailbox', () => {
  let endpoint: Endpoint;
  beforeEach(async () => {
    endpoint = await endpoints.create();
  });

  test.each<[string, unknown]>([
    ['0', 0n],
    ['negative', -1n],
    ['2^64', U64_LIMIT],
    ['reserved 0x1', 1n],
    ['reserved 0x8000', 0x8000n],
    ['reserved 0xffff', 0xffffn],
    ['a string', '65536'],
    ['a fraction', 65536.5],
    ['an unsafe integer', 2 ** 60],
    ['undefined', undefined],
    ['null', null],
  ])('vaddr %s', (_, vaddr) => {
    expectThrows(() => endpoint.openMailbox(loose(vaddr)), INVALID, names('Endpoint.openMailbox', 'vaddr'));
  });

  test('the lowest vaddr above the reserved range is accepted', () => {
    expect(endpoint.openMailbox(0x10000n).vaddr).toBe(0x10000n);
    expect(endpoint.openMailbox(U64_LIMIT - 1n).vaddr).toBe(U64_LIMIT - 1n);
  });

  test.each<[string, unknown, string]>([
    ['null options', null, 'options'],
    ['string options', 'ops', 'options'],
    ['unknown key', { thresold: 4 }, 'thresold'],
    ['unknown epoch', { epoch: 'time' }, 'epoch'],
    ['threshold 0', { threshold: 0 }, 'threshold'],
    ['negative threshold', { threshold: -1 }, 'threshold'],
    ['fractional threshold', { threshold: 1.5 }, 'threshold'],
    ['threshold 2^64', { threshold: U64_LIMIT }, 'threshold'],
    ['string threshold', { threshold: '8' }, 'threshold'],
    ['maxBuffers 0', { maxBuffers: 0 }, 'maxBuffers'],
    ['negative maxBuffers', { maxBuffers: -1 }, 'maxBuffers'],
    ['fractional maxBuffers', { maxBuffers: 1.5 }, 'maxBuffers'],
    ['maxBuffers above 2^20', { maxBuffers: 2 ** 20 + 1 }, 'maxBuffers'],
    ['string maxBuffers', { maxBuffers: '4' }, 'maxBuffers'],
  ])('%s', (_, options, argument) => {
    expectThrows(() => endpoint.openMailbox(VADDR, loose(options)), INVALID, names('Endpoint.openMailbox', argument));
    // Nothing was opened: the vaddr is still free.
    expect(endpoint.openMailbox(VADDR).vaddr).toBe(VADDR);
  });
});

describe('Mailbox.post', () => {
  let mailbox: Mailbox;
  beforeEach(async () => {
    mailbox = (await endpoints.create()).openMailbox(VADDR);
  });

  test.each<[string, unknown, string]>([
    ['negative size', -1, 'size'],
    ['fractional size', 1.5, 'size'],
    ['size above 2^40', 2 ** 40 + 1, 'size'],
    ['NaN size', NaN, 'size'],
    ['a string', '8', 'buffer'],
    ['null', null, 'buffer'],
    ['undefined', undefined, 'buffer'],
    ['a plain array', [0, 0, 0], 'buffer'],
    ['size 0 for a bytes epoch', 0, 'buffer'],
    ['an empty buffer for a bytes epoch', new Uint8Array(0), 'buffer'],
  ])('%s', (_, value, argument) => {
    expectThrows(() => mailbox.post(loose(value)), INVALID, names('Mailbox.post', argument));
    expect(mailbox.postedCount).toBe(0);
  });

  test.each<[string, unknown, string]>([
    ['null options', null, 'options'],
    ['unknown key', { maxBuffers: 2 }, 'maxBuffers'],
    ['threshold 0', { threshold: 0 }, 'threshold'],
    ['negative threshold', { threshold: -1n }, 'threshold'],
    ['fractional threshold', { threshold: 1.5 }, 'threshold'],
    ['threshold larger than a bytes-epoch buffer', { threshold: 17 }, 'threshold'],
  ])('%s', (_, options, argument) => {
    expectThrows(() => mailbox.post(16, loose(options)), INVALID, names('Mailbox.post', argument));
    expect(mailbox.postedCount).toBe(0);
  });

  test('a mailbox threshold larger than the buffer is refused for bytes epochs', async () => {
    const box = (await endpoints.create()).openMailbox(VADDR, { threshold: 32 });
    expectThrows(() => box.post(16), INVALID, names('Mailbox.post', 'threshold'));
    expect(box.post(32).byteLength).toBe(32);
  });
});

describe('Endpoint.put', () => {
  let sender: Endpoint;
  let receiver: Endpoint;
  let mailbox: Mailbox;
  beforeEach(async () => {
    receiver = await endpoints.create();
    sender = await endpoints.create();
    mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(16);
  });

  /** The refused put placed nothing: the next valid put is the first one counted. */
  async function expectNothingPlaced(): Promise<void> {
    expect(mailbox.epoch).toBe(0);
    await sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0 });
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1, ops: 1, bytes: 1 });
  }

  test.each<[string, unknown, string]>([
    ['empty target', '', 'target'],
    ['numeric target', 42, 'target'],
    ['null target', null, 'target'],
    ['undefined target', undefined, 'target'],
  ])('%s', async (_, target, argument) => {
    const call = () => sender.put(loose(target), VADDR, Buffer.alloc(1));
    await expectFails(call, INVALID, names('Endpoint.put', argument));
    await expectNothingPlaced();
  });

  test.each<[string, unknown]>([
    ['0', 0n],
    ['negative', -1n],
    ['2^64', U64_LIMIT],
    ['a string', 'x'],
    ['a fraction', 1.5],
  ])('vaddr %s', async (_, vaddr) => {
    await expectFails(() => sender.put(receiver, loose(vaddr), Buffer.alloc(1)), INVALID, names('Endpoint.put', 'vaddr'));
    await expectNothingPlaced();
  });

  test('a reserved vaddr is a valid put target (the library protocols use them)', async () => {
    await expectRejects(sender.put(receiver, 0x1n, Buffer.alloc(1)), 'ERR_RVMA_NO_MAILBOX');
    await expectNothingPlaced();
  });

  test.each<[string, unknown]>([
    ['a string', 'bytes'],
    ['null', null],
    ['a plain array', [1, 2, 3]],
    ['a number', 42],
  ])('data %s', async (_, data) => {
    await expectFails(() => sender.put(receiver, VADDR, loose(data)), INVALID, names('Endpoint.put', 'data'));
    await expectNothingPlaced();
  });

  test.each<[string, unknown, string]>([
    ['null options', null, 'options'],
    ['string options', 'append', 'options'],
    ['unknown key', { ofset: 1 }, 'ofset'],
    ['negative offset', { offset: -1 }, 'offset'],
    ['fractional offset', { offset: 1.5 }, 'offset'],
    ['string offset', { offset: '0' }, 'offset'],
    ['offset 2^64', { offset: U64_LIMIT }, 'offset'],
    ['string append', { append: 'yes' }, 'append'],
    ['numeric append', { append: 1 }, 'append'],
    ['offset together with append', { offset: 0, append: true }, 'offset'],
    ['string lazyAck', { lazyAck: 'yes' }, 'lazyAck'],
    ['negative timeout', { timeout: -1 }, 'timeout'],
    ['NaN timeout', { timeout: NaN }, 'timeout'],
    ['string timeout', { timeout: '10' }, 'timeout'],
    ['object signal', { signal: {} }, 'signal'],
    ['string signal', { signal: 'abort' }, 'signal'],
  ])('%s', async (_, options, argument) => {
    const call = () => sender.put(receiver, VADDR, Buffer.alloc(1), loose(options) as PutOptions);
    const error = await expectFails(call, INVALID, names('Endpoint.put', argument));
    if (argument === 'offset' && 'append' in (options as object)) expect(error.message).toMatch(/append/);
    await expectNothingPlaced();
  });
});

describe('Mailbox.next', () => {
  let mailbox: Mailbox;
  beforeEach(async () => {
    mailbox = (await endpoints.create()).openMailbox(VADDR);
  });

  test.each<[string, unknown, string]>([
    ['null options', null, 'options'],
    ['string options', 'soon', 'options'],
    ['unknown key', { timout: 10 }, 'timout'],
    ['negative timeout', { timeout: -1 }, 'timeout'],
    ['NaN timeout', { timeout: NaN }, 'timeout'],
    ['string timeout', { timeout: '10' }, 'timeout'],
    ['object signal', { signal: {} }, 'signal'],
    ['string signal', { signal: 'abort' }, 'signal'],
  ])('%s', async (_, options, argument) => {
    await expectFails(() => mailbox.next(loose(options)), INVALID, names('Mailbox.next', argument));
  });
});

describe('Mailbox.completions', () => {
  let mailbox: Mailbox;
  beforeEach(async () => {
    mailbox = (await endpoints.create()).openMailbox(VADDR);
  });

  // Bad options are refused when the iterator is asked for, before any iteration.
  test.each<[string, unknown, string]>([
    ['null options', null, 'options'],
    ['string options', 'all', 'options'],
    ['unknown key', { timeout: 10 }, 'timeout'],
    ['string signal', { signal: 'abort' }, 'signal'],
    ['object signal', { signal: {} }, 'signal'],
  ])('%s', async (_, options, argument) => {
    expect(() => mailbox.completions(loose(options))).toThrow(
      expect.objectContaining({ code: INVALID, message: expect.stringMatching(new RegExp(argument)) }),
    );
  });
});

describe('errors', () => {
  test('RvmaError is an Error with a name and a code', async () => {
    const error = await expectRejects(Endpoint.create({ nodeId: uniqueNodeId(), progress: loose('fast') }), INVALID);
    expect(error).toBeInstanceOf(Error);
    expect(error.stack).toBeDefined();
  });
});
