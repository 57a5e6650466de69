// Peer authentication (Endpoint.create({ auth })) over loopback and tcp (test/shm/auth.test.ts
// and test/rdma/auth.test.ts hold the same cases for shm and verbs): peers that share the
// secret exchange puts as before; a wrong secret, or a secret on one side only, is refused on
// both sides with ERR_RVMA_AUTH and reported as 'authFailed', nothing of the refused peer is
// placed, nothing is retried, and the endpoint goes on serving legitimate peers.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type AuthFailedInfo, Endpoint, type EndpointOptions, type ProgressMode } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { startAgent, trackChildren, waitFor } from '../helpers/children';
import { TRANSPORTS, type Transport } from '../helpers/transports';

jest.setTimeout(60_000);

const SECRET = 'the cluster secret, at least 16 bytes';
const OTHER = 'another cluster secret, same length!';
const tracker = trackEndpoints();

interface Setting {
  name: string;
  options: (progress: ProgressMode) => EndpointOptions;
  listen: () => string | undefined;
  /** How a sender names the receiver: its address, or (loopback) its node id. */
  target: (receiver: Endpoint) => string;
}

const overTransport = (t: Transport): Setting => ({
  name: t.name,
  options: (progress) => ({ progress, provider: t.provider, ...t.options }),
  listen: () => t.listen('auth'),
  target: (receiver) => receiver.address,
});
const SETTINGS: Setting[] = [
  { name: 'loopback', options: (progress) => ({ progress, provider: 'loopback' }), listen: () => undefined, target: (r) => r.nodeId },
  ...TRANSPORTS.filter((t) => t.provider === 'tcp').map(overTransport),
];
const CASES = SETTINGS.flatMap((s) => PROGRESS_MODES.map((p): [string, ProgressMode, Setting] => [s.name, p, s]));

/** Collects an endpoint's authFailed events. */
function failures(endpoint: Endpoint): AuthFailedInfo[] {
  const seen: AuthFailedInfo[] = [];
  endpoint.on('authFailed', (info: AuthFailedInfo) => seen.push(info));
  return seen;
}

describe.each(CASES)('auth over %s (%s progress)', (_name, progress, setting) => {
  async function endpoint(label: string, secret: string | undefined, listen = false): Promise<Endpoint> {
    return tracker.create({
      nodeId: uniqueNodeId(label),
      ...setting.options(progress),
      ...(listen ? { listen: setting.listen() } : {}),
      ...(secret ? { auth: { secret } } : {}),
    });
  }

  test('peers that share the secret exchange puts, small and large, byte-exact', async () => {
    const receiver = await endpoint('owner', SECRET, true);
    const sender = await endpoint('friend', SECRET);
    const seen = [...failures(receiver), ...failures(sender)];
    const small = receiver.openMailbox(VADDR);
    const large = receiver.openMailbox(VADDR + 1n);
    small.post(5);
    large.post(3 << 20);
    const big = Buffer.alloc(3 << 20);
    for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i * 2654435761 >>> 0, i);
    await sender.put(setting.target(receiver), VADDR, Buffer.from('hello'), { timeout: 15_000 });
    await sender.put(setting.target(receiver), VADDR + 1n, big, { timeout: 15_000 });
    expect(Buffer.from((await small.next({ timeout: 15_000 })).buffer).toString()).toBe('hello');
    expect(Buffer.from((await large.next({ timeout: 15_000 })).buffer).equals(big)).toBe(true);
    expect(seen).toEqual([]);
  });

  test('a wrong secret: refused on both sides with ERR_RVMA_AUTH, nothing placed, not retried; the owner serves its friends', async () => {
    const receiver = await endpoint('owner', SECRET, true);
    const stranger = await endpoint('stranger', OTHER);
    const friend = await endpoint('friend', SECRET);
    const atReceiver = failures(receiver);
    const atStranger = failures(stranger);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);

    const target = setting.target(receiver);
    const first = await expectRejects(stranger.put(target, VADDR, Buffer.from('stranger'), { timeout: 15_000 }), 'ERR_RVMA_AUTH');
    expect(first.message).toMatch(/could not authenticate each other.*proof does not match/);
    await waitFor('authFailed at the owner', async () => atReceiver.length > 0);
    expect(atReceiver[0].message).toMatch(/proof does not match this endpoint's secret/);
    expect(`${atReceiver[0].peer} ${atReceiver[0].message}`).toContain(stranger.nodeId);
    expect(atStranger.length).toBeGreaterThan(0);
    // A second put fails the same way, with the same typed error.
    await expectRejects(stranger.put(target, VADDR, Buffer.from('again!!!'), { timeout: 15_000 }), 'ERR_RVMA_AUTH');

    await friend.put(target, VADDR, Buffer.from('friend!!'), { timeout: 15_000 });
    const done = await mailbox.next({ timeout: 15_000 });
    expect({ epoch: done.epoch, data: Buffer.from(done.buffer).toString() }).toEqual({ epoch: 1, data: 'friend!!' });
  });

  test.each([
    ['the receiver only', SECRET, undefined, /the peer requires authentication, and this endpoint has no auth secret/],
    ['the sender only', undefined, SECRET, /the peer does not authenticate, and this endpoint requires it/],
  ])('a secret on %s: ERR_RVMA_AUTH saying which side lacks it', async (_side, receiverSecret, senderSecret, senderText) => {
    const receiver = await endpoint('owner', receiverSecret, true);
    const sender = await endpoint('sender', senderSecret);
    const atReceiver = failures(receiver);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    const error = await expectRejects(sender.put(setting.target(receiver), VADDR, Buffer.from('mismatch'), { timeout: 15_000 }), 'ERR_RVMA_AUTH');
    expect(error.message).toMatch(senderText);
    await waitFor('authFailed at the owner', async () => atReceiver.length > 0);
    const plain = await endpoint('plain', receiverSecret);
    await plain.put(setting.target(receiver), VADDR, Buffer.from('matching'), { timeout: 15_000 });
    expect(Buffer.from((await mailbox.next({ timeout: 15_000 })).buffer).toString()).toBe('matching');
  });

  (setting.name === 'loopback' ? test.skip : test)('connect() to a peer with another secret rejects with ERR_RVMA_AUTH', async () => {
    const receiver = await endpoint('owner', SECRET, true);
    const stranger = await endpoint('stranger', OTHER);
    await expectRejects(stranger.connect(receiver.address, { timeout: 15_000 }), 'ERR_RVMA_AUTH');
    const friend = await endpoint('friend', SECRET);
    expect(await friend.connect(receiver.address, { timeout: 15_000 })).toBe(receiver.nodeId);
  });
});

describe('auth across processes', () => {
  const children = trackChildren('each');

  test.each(TRANSPORTS.filter((t) => t.provider === 'tcp').map((t) => [t.name, t] as const))('over %s: a child with the secret puts, a child with another is refused', async (_name, t) => {
    const receiver = await tracker.create({ nodeId: uniqueNodeId('owner'), provider: t.provider, listen: t.listen('auth'), auth: { secret: SECRET }, ...t.options });
    const atReceiver = failures(receiver);
    const friend = await startAgent(children, 'friend', { provider: t.provider, ...t.options, auth: { secret: SECRET } });
    const stranger = await startAgent(children, 'stranger', { provider: t.provider, ...t.options, auth: { secret: OTHER } });
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(4);
    const refused = await stranger.child.request({ cmd: 'connect', address: receiver.address }).catch((e: Error) => e);
    expect(refused).toMatchObject({ code: 'ERR_RVMA_AUTH' });
    await waitFor('authFailed at the owner', async () => atReceiver.length > 0);
    await friend.child.request({ cmd: 'connect', address: receiver.address });
    await friend.child.request({ cmd: 'put', target: receiver.nodeId, vaddr: VADDR.toString(), hex: '01020304' });
    expect(Buffer.from((await mailbox.next({ timeout: 20_000 })).buffer).toString('hex')).toBe('01020304');
  });
});

describe('auth: arguments', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-auth-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function keyFile(name: string, content: string, mode: number): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, content);
    fs.chmodSync(file, mode);
    return file;
  }

  test('a key file with one trailing newline holds the same secret as the inline string', async () => {
    const file = keyFile('secret', `${SECRET}\n`, 0o600);
    const receiver = await tracker.create({ provider: 'tcp', listen: 'tcp://127.0.0.1:0', auth: { secretFile: file } });
    const sender = await tracker.create({ provider: 'tcp', auth: { secret: Buffer.from(SECRET) } });
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(2);
    await sender.put(receiver.address, VADDR, Buffer.from('ok'), { timeout: 15_000 });
    expect(Buffer.from((await mailbox.next({ timeout: 15_000 })).buffer).toString()).toBe('ok');
  });

  test.each([
    ['a short secret', { secret: 'fifteen bytes!!' }, /16 to 1024 bytes, got 15/],
    ['a huge secret', { secret: Buffer.alloc(1025, 1) }, /16 to 1024 bytes, got 1025/],
    ['both forms', { secret: SECRET, secretFile: '/nonexistent' }, /exactly one of secret and secretFile/],
    ['neither form', {}, /exactly one of secret and secretFile/],
    ['a number', { secret: 12345678901234567890 }, /a string or a Uint8Array/],
    ['an unknown key', { secret: SECRET, key: 'x' }, /key/],
    ['a missing file', { secretFile: '/nonexistent/rvma-secret' }, /cannot read auth.secretFile/],
  ])('%s is refused with ERR_RVMA_INVALID_ARGUMENT', async (_name, auth, text) => {
    await expectRejects(Endpoint.create({ provider: 'loopback', auth: auth as never }), 'ERR_RVMA_INVALID_ARGUMENT', text);
  });

  test('a key file that group or others may read is refused, as ssh refuses such a key', async () => {
    const file = keyFile('open', SECRET, 0o644);
    await expectRejects(Endpoint.create({ provider: 'loopback', auth: { secretFile: file } }), 'ERR_RVMA_INVALID_ARGUMENT', /may be read by others \(mode 644\)/);
  });

  test('the caller keeps its secret buffer as it was', async () => {
    const mine = Buffer.from(SECRET);
    await tracker.create({ provider: 'loopback', auth: { secret: mine } });
    expect(mine.toString()).toBe(SECRET);
  });
});
