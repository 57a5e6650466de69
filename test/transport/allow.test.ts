// Per-mailbox and per-region access policy (`allow`, and Mailbox.setAllow later): the receiver's
// core refuses a put, every part of a split put and a raw write from a node not on the list, with
// ERR_RVMA_FORBIDDEN, before a byte is placed; allowed nodes go on being served over the same endpoint.
import { type Endpoint, type EndpointOptions, type ProgressMode } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects, expectThrows } from '../helpers/errors';
import { type Agent, startAgent, trackChildren } from '../helpers/children';
import { TRANSPORTS, type Transport } from '../helpers/transports';

jest.setTimeout(60_000);

const tracker = trackEndpoints();

interface Setting {
  name: string;
  /** Options of the receiver, and of each sender. */
  receiver: (progress: ProgressMode) => EndpointOptions;
  sender: (progress: ProgressMode) => EndpointOptions;
  raw: boolean;
}

const overTransport = (t: Transport): Setting => ({
  name: t.name,
  receiver: (progress) => ({ progress, provider: t.provider, listen: t.listen('allow'), ...t.options }),
  sender: (progress) => ({ progress, provider: t.provider, ...t.options }),
  raw: true,
});
const SETTINGS: Setting[] = [
  { name: 'loopback', receiver: (progress) => ({ progress, provider: 'loopback' }), sender: (progress) => ({ progress, provider: 'loopback' }), raw: false },
  ...TRANSPORTS.map(overTransport),
];
const CASES = SETTINGS.flatMap((s) => PROGRESS_MODES.map((p): [string, ProgressMode, Setting] => [s.name, p, s]));

describe.each(CASES)('allow over %s (%s progress)', (_name, progress, setting) => {
  async function trio(): Promise<{ receiver: Endpoint; friend: Endpoint; stranger: Endpoint }> {
    const receiver = await tracker.create({ nodeId: uniqueNodeId('owner'), ...setting.receiver(progress) });
    const friend = await tracker.create({ nodeId: uniqueNodeId('friend'), ...setting.sender(progress) });
    const stranger = await tracker.create({ nodeId: uniqueNodeId('stranger'), ...setting.sender(progress) });
    return { receiver, friend, stranger };
  }

  test('a put from a node not allowed is refused before a byte is placed; allowed nodes and open mailboxes are served', async () => {
    const { receiver, friend, stranger } = await trio();
    const guarded = receiver.openMailbox(VADDR, { allow: [friend.nodeId] });
    const open = receiver.openMailbox(VADDR + 1n);
    guarded.post(16);
    open.post(8);

    for (const options of [{ offset: 0 }, { append: true }]) {
      const error = await expectRejects(stranger.put(receiver.nodeId, VADDR, Buffer.alloc(16, 0xee), { ...options, timeout: 10_000 }), 'ERR_RVMA_FORBIDDEN');
      expect(error.message).toContain(`mailbox 0x${VADDR.toString(16)} on node "${receiver.nodeId}" does not accept puts from this node`);
    }
    // A large put too (shm: pulled or chunked; tcp: its payload skipped).
    await expectRejects(stranger.put(receiver.nodeId, VADDR, Buffer.alloc(2 << 20, 0xee), { timeout: 15_000 }), 'ERR_RVMA_FORBIDDEN');
    // The stranger is still served where it is allowed.
    await stranger.put(receiver.nodeId, VADDR + 1n, Buffer.from('stranger'), { timeout: 10_000 });
    expect(Buffer.from((await open.next({ timeout: 10_000 })).buffer).toString()).toBe('stranger');

    // Had a refused byte been placed, the 16-byte epoch would have ended with it.
    const mine = Buffer.from('friend-bytes-16B');
    await friend.put(receiver.nodeId, VADDR, mine, { timeout: 10_000 });
    const done = await guarded.next({ timeout: 10_000 });
    expect({ epoch: done.epoch, bytes: done.bytes, data: Buffer.from(done.buffer).toString() }).toEqual({ epoch: 1, bytes: 16, data: mine.toString() });
  });

  test('a list of several nodes lets each of them in', async () => {
    const { receiver, friend, stranger } = await trio();
    const mailbox = receiver.openMailbox(VADDR, { allow: [stranger.nodeId, friend.nodeId], epoch: 'ops', threshold: 2 });
    mailbox.post(16);
    await friend.put(receiver.nodeId, VADDR, Buffer.from('friend..'), { offset: 0, timeout: 10_000 });
    await stranger.put(receiver.nodeId, VADDR, Buffer.from('stranger'), { offset: 8, timeout: 10_000 });
    expect(Buffer.from((await mailbox.next({ timeout: 10_000 })).buffer).toString()).toBe('friend..stranger');
  });

  test('setAllow changes who may put from then on: narrowed, widened to several, then to every node', async () => {
    const { receiver, friend, stranger } = await trio();
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1 });
    for (let i = 0; i < 4; i++) mailbox.post(8);
    const put = (from: Endpoint, text: string) => from.put(receiver.nodeId, VADDR, Buffer.from(text), { timeout: 10_000 });
    const next = async () => Buffer.from((await mailbox.next({ timeout: 10_000 })).buffer).toString();
    await put(stranger, 'anyone');
    expect(await next()).toBe('anyone\0\0');
    mailbox.setAllow([friend.nodeId]);
    await expectRejects(put(stranger, 'stranger'), 'ERR_RVMA_FORBIDDEN');
    await put(friend, 'friend');
    expect(await next()).toBe('friend\0\0');
    mailbox.setAllow([friend.nodeId, stranger.nodeId]);
    await put(stranger, 'both ok');
    expect(await next()).toBe('both ok\0');
    mailbox.setAllow(undefined);
    await put(stranger, 'open');
    expect(await next()).toBe('open\0\0\0\0');
    expect(mailbox.postedCount).toBe(0);
  });

  (setting.raw ? test : test.skip)('a raw write from a node not allowed is refused; the region keeps its bytes', async () => {
    const { receiver, friend, stranger } = await trio();
    const region = receiver.registerRegion(64, { allow: [friend.nodeId] });
    const error = await expectRejects(stranger.rawWrite(receiver.nodeId, region.key, 0, Buffer.alloc(32, 0xee), { timeout: 10_000 }), 'ERR_RVMA_FORBIDDEN');
    expect(error.message).toContain('does not accept raw writes from this node');
    await friend.rawWrite(receiver.nodeId, region.key, 32, Buffer.alloc(32, 0x11), { timeout: 10_000 });
    const written = await region.next({ timeout: 10_000 });
    expect({ offset: written.offset, bytes: written.bytes }).toEqual({ offset: 32, bytes: 32 });
    expect(Buffer.from(region.buffer)).toEqual(Buffer.concat([Buffer.alloc(32), Buffer.alloc(32, 0x11)]));
    // Refused again after the friend's write has the region lent out (shm, verbs pin it).
    await expectRejects(stranger.rawWrite(receiver.nodeId, region.key, 0, Buffer.alloc(8, 0xee), { timeout: 10_000 }), 'ERR_RVMA_FORBIDDEN');
    expect(Buffer.from(region.buffer).subarray(0, 32)).toEqual(Buffer.alloc(32));
  });
});

describe('allow: split puts over tcp stripes', () => {
  test.each(PROGRESS_MODES)('every part of a split put from a node not allowed is refused (%s progress)', async (progress) => {
    const tcp = { stripes: 4, stripeMinBytes: 64 * 1024 };
    const receiver = await tracker.create({ nodeId: uniqueNodeId('owner'), progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0', tcp });
    const friend = await tracker.create({ nodeId: uniqueNodeId('friend'), progress, provider: 'tcp', tcp });
    const stranger = await tracker.create({ nodeId: uniqueNodeId('stranger'), progress, provider: 'tcp', tcp });
    const size = 1 << 20;
    const mailbox = receiver.openMailbox(VADDR, { allow: [friend.nodeId] });
    mailbox.post(size);
    await expectRejects(stranger.put(receiver.nodeId, VADDR, Buffer.alloc(size, 0xee), { timeout: 15_000 }), 'ERR_RVMA_FORBIDDEN');
    const data = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) data.writeUInt32LE(i, i);
    await friend.put(receiver.nodeId, VADDR, data, { timeout: 15_000 });
    const done = await mailbox.next({ timeout: 15_000 });
    expect(done.epoch).toBe(1);
    expect(Buffer.from(done.buffer).equals(data)).toBe(true);
  });
});

describe('allow: arguments', () => {
  test('allow must be a non-empty array of node ids, for mailboxes and regions', async () => {
    const endpoint = await tracker.create({ provider: 'loopback' });
    const message = /allow must be a non-empty array of node ids/;
    for (const allow of [[], 'friend', [1], ['']]) {
      const expected = Array.isArray(allow) && allow.length ? /allow\[0\] must be a non-empty string/ : message;
      expectThrows(() => endpoint.openMailbox(VADDR, { allow: allow as string[] }), 'ERR_RVMA_INVALID_ARGUMENT', expected);
      expectThrows(() => endpoint.registerRegion(64, { allow: allow as string[] }), 'ERR_RVMA_INVALID_ARGUMENT', expected);
    }
    expectThrows(() => endpoint.registerRegion(64, { deny: ['x'] } as never), 'ERR_RVMA_INVALID_ARGUMENT');
    // Nothing was opened by the refused calls.
    const mailbox = endpoint.openMailbox(VADDR, { allow: ['someone'] });
    expect(mailbox.vaddr).toBe(VADDR);
    for (const allow of [[], 'friend', [1], ['']]) expectThrows(() => mailbox.setAllow(allow as string[]), 'ERR_RVMA_INVALID_ARGUMENT', /Mailbox.setAllow/);
    mailbox.close();
    expectThrows(() => mailbox.setAllow(['someone']), 'ERR_RVMA_CLOSED');
  });
});

describe('allow across processes', () => {
  const children = trackChildren('each');

  test('a child allowed by node id puts; another child is refused with ERR_RVMA_FORBIDDEN over tcp', async () => {
    const receiver = await tracker.create({ nodeId: uniqueNodeId('owner'), provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
    const friend: Agent = await startAgent(children, 'friend', { provider: 'tcp' });
    const stranger: Agent = await startAgent(children, 'stranger', { provider: 'tcp' });
    const mailbox = receiver.openMailbox(VADDR, { allow: [friend.nodeId] });
    mailbox.post(4);
    for (const agent of [friend, stranger]) await agent.child.request({ cmd: 'connect', address: receiver.address });
    const refused = await stranger.child.request({ cmd: 'put', target: receiver.nodeId, vaddr: VADDR.toString(), hex: 'eeeeeeee' }).catch((e: Error) => e);
    expect(refused).toMatchObject({ code: 'ERR_RVMA_FORBIDDEN' });
    await friend.child.request({ cmd: 'put', target: receiver.nodeId, vaddr: VADDR.toString(), hex: '01020304' });
    expect(Buffer.from((await mailbox.next({ timeout: 20_000 })).buffer).toString('hex')).toBe('01020304');
  });
});
