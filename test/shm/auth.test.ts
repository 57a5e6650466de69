// Peer authentication over shm: endpoints that share the secret connect and their puts land
// byte-exact; a wrong secret, or a secret on one side only, fails the handshake with
// ERR_RVMA_AUTH on the dialer (connect and puts alike), reports authFailed on the acceptor,
// places nothing, and leaves the acceptor serving legitimate peers. With CMA (large puts
// pulled) and without (copied through the ring), in both progress modes, and once across
// real processes.
import { type AuthFailedInfo, type Endpoint, type EndpointOptions, type ProgressMode } from '../../src';
import { VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { seededBytes, startAgent, trackChildren, waitFor } from '../helpers/children';
import { SHM_TRANSPORTS, type Transport, transportCases } from '../helpers/transports';

jest.setTimeout(60_000);

const tracker = trackEndpoints();

const SECRET = 'shm-auth-test-secret-0123456789';
const OTHER = 'another-secret-entirely-9876543210';
const LARGE = 2 << 20; // above shm.eagerMaxBytes: pulled (cma) or chunked through the ring (copy)
const WAIT = { timeout: 15_000 };

/** Every authFailed the endpoint reports, from now on. */
function authFailures(endpoint: Endpoint): AuthFailedInfo[] {
  const seen: AuthFailedInfo[] = [];
  endpoint.on('authFailed', (info: AuthFailedInfo) => seen.push(info));
  return seen;
}

async function reported(what: string, seen: AuthFailedInfo[]): Promise<AuthFailedInfo> {
  await waitFor(what, async () => seen.length > 0);
  return seen[0];
}

const withSecret = (secret: string | undefined): Pick<EndpointOptions, 'auth'> => (secret ? { auth: { secret } } : {});

describe.each(transportCases(SHM_TRANSPORTS))('shm authentication over %s (%s progress)', (_name, progress: ProgressMode, t: Transport) => {
  const acceptor = (secret?: string, label = 'acceptor'): Promise<Endpoint> =>
    tracker.create({ nodeId: uniqueNodeId(label), progress, provider: 'shm', listen: t.listen('auth'), ...t.options, ...withSecret(secret) });
  const dialer = (secret?: string, label = 'dialer'): Promise<Endpoint> =>
    tracker.create({ nodeId: uniqueNodeId(label), progress, provider: 'shm', ...t.options, ...withSecret(secret) });

  test('with the same secret, small and large puts land byte-exact', async () => {
    const receiver = await acceptor(SECRET);
    const sender = await dialer(SECRET);
    const failures = [receiver, sender].map(authFailures);
    const small = receiver.openMailbox(VADDR);
    const large = receiver.openMailbox(VADDR + 1n);
    small.post(64);
    large.post(LARGE);
    expect(await sender.connect(receiver.address, WAIT)).toBe(receiver.nodeId);
    const a = seededBytes(64, 1);
    const b = seededBytes(LARGE, 2);
    await sender.put(receiver.nodeId, VADDR, a, WAIT);
    await sender.put(receiver.nodeId, VADDR + 1n, b, WAIT);
    const [first, second] = [await small.next(WAIT), await large.next(WAIT)];
    expect(Buffer.from(first.buffer).equals(a)).toBe(true);
    expect(Buffer.from(second.buffer).equals(b)).toBe(true);
    // shm-copy really copied: authentication changes nothing of how large puts travel.
    const peer = { nodeId: receiver.nodeId, provider: 'shm', ...(t.name === 'shm-copy' ? { detail: 'copy' } : {}) };
    expect(sender.peers()).toContainEqual(expect.objectContaining(peer));
    expect(failures).toEqual([[], []]);
  });

  test('a wrong secret: connect and puts fail ERR_RVMA_AUTH, the acceptor reports authFailed, nothing is placed, a legitimate peer is served after', async () => {
    const receiver = await acceptor(SECRET);
    const impostor = await dialer(OTHER, 'impostor');
    const friend = await dialer(SECRET, 'friend');
    const [onReceiver, onImpostor] = [receiver, impostor].map(authFailures);
    // Any single put placed would end an epoch of this mailbox.
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1n });
    const buffer = mailbox.post(LARGE);

    const refused = await expectRejects(impostor.connect(receiver.address, WAIT), 'ERR_RVMA_AUTH');
    expect(refused.message).toMatch(/authenticat/);
    // The dialer found the acceptor's proof wrong; the acceptor learned it was refused.
    expect((await reported('authFailed on the impostor', onImpostor)).message).toMatch(/proof does not match/);
    const seen = await reported('authFailed on the acceptor', onReceiver);
    expect(seen.peer).toBe(impostor.nodeId);
    expect(seen.message).toMatch(/authentication failed/);

    // Puts dial again, and fail alike: nothing is retried into success, small or large.
    await expectRejects(impostor.put(receiver.address, VADDR, Buffer.alloc(16, 0xee), WAIT), 'ERR_RVMA_AUTH');
    await expectRejects(impostor.put(receiver.address, VADDR, Buffer.alloc(LARGE, 0xee), WAIT), 'ERR_RVMA_AUTH');
    expect(mailbox.epoch).toBe(0);
    expect(Buffer.from(buffer).equals(Buffer.alloc(LARGE))).toBe(true);

    const data = seededBytes(LARGE, 3);
    await friend.put(receiver.address, VADDR, data, WAIT);
    const done = await mailbox.next(WAIT);
    expect({ epoch: done.epoch, bytes: done.bytes }).toEqual({ epoch: 1, bytes: LARGE });
    expect(Buffer.from(done.buffer).equals(data)).toBe(true);
  });

  test.each([
    ['the acceptor only', SECRET, undefined, /the peer does not authenticate/],
    ['the dialer only', undefined, SECRET, /the peer requires authentication/],
  ])('a secret on %s: ERR_RVMA_AUTH, authFailed on the acceptor, nothing placed', async (_side, acceptorSecret, dialerSecret, why) => {
    const receiver = await acceptor(acceptorSecret);
    const sender = await dialer(dialerSecret);
    const [onReceiver, onSender] = [receiver, sender].map(authFailures);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1n });
    const buffer = mailbox.post(64);

    await expectRejects(sender.connect(receiver.address, WAIT), 'ERR_RVMA_AUTH');
    await expectRejects(sender.put(receiver.address, VADDR, Buffer.alloc(64, 0xee), WAIT), 'ERR_RVMA_AUTH');
    const seen = await reported('authFailed on the acceptor', onReceiver);
    expect({ peer: seen.peer, why: why.test(seen.message) }).toEqual({ peer: sender.nodeId, why: true });
    // The dialer learned it from the acceptor's refusal: the mismatch, seen from its side.
    expect((await reported('authFailed on the dialer', onSender)).message).toMatch(/authentication failed: the peer/);
    expect(mailbox.epoch).toBe(0);
    expect(Buffer.from(buffer).equals(Buffer.alloc(64))).toBe(true);
  });
});

describe('shm authentication across processes', () => {
  const children = trackChildren('each');
  const shm = SHM_TRANSPORTS[0];

  test('a child with the secret puts, a child with another is refused; a child acceptor refuses this process', async () => {
    const receiver = await tracker.create({ nodeId: uniqueNodeId('acceptor'), provider: 'shm', listen: shm.listen('auth'), auth: { secret: SECRET } });
    const onReceiver = authFailures(receiver);
    const friend = await startAgent(children, 'friend', { provider: 'shm', auth: { secret: SECRET } });
    const impostor = await startAgent(children, 'impostor', { provider: 'shm', auth: { secret: OTHER } });
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1n });
    const buffer = mailbox.post(4);

    const refused = await impostor.child.request({ cmd: 'connect', address: receiver.address }).catch((e: Error) => e);
    expect(refused).toMatchObject({ code: 'ERR_RVMA_AUTH' });
    await impostor.child.next('authFailed', 15_000);
    expect((await reported('authFailed on the acceptor', onReceiver)).peer).toBe(impostor.nodeId);
    expect(Buffer.from(buffer).equals(Buffer.alloc(4))).toBe(true);

    await friend.child.request({ cmd: 'put', target: receiver.address, vaddr: VADDR.toString(), hex: '01020304' });
    const done = await mailbox.next({ timeout: 20_000 });
    expect({ epoch: done.epoch, data: Buffer.from(done.buffer).toString('hex') }).toEqual({ epoch: 1, data: '01020304' });

    // The other way round: a child acceptor refuses this process's wrong secret.
    const guard = await startAgent(children, 'guard', { provider: 'shm', listen: shm.listen('guard'), auth: { secret: SECRET } });
    const outsider = await tracker.create({ nodeId: uniqueNodeId('outsider'), provider: 'shm', auth: { secret: OTHER } });
    await expectRejects(outsider.connect(guard.address, { timeout: 20_000 }), 'ERR_RVMA_AUTH');
    expect(await guard.child.next('authFailed', 15_000)).toMatchObject({ peer: outsider.nodeId });
  });
});
