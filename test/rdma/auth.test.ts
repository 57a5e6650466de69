// Peer authentication over verbs in the Soft-RoCE guest: endpoints sharing a secret connect and
// place eager and pulled (RDMA_READ) puts byte-exact; a peer with another secret, or one side
// authenticating and the other not, fails with ERR_RVMA_AUTH before anything is placed, the
// acceptor reports 'authFailed' and goes on serving peers that do prove the secret.
import { type AuthFailedInfo, type Endpoint, type ProgressMode } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { EAGER_MAX, describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const WAIT = { timeout: 30_000 };
const SECRET = { secret: 'verbs auth test secret, shared' };
const OTHER = { secret: 'verbs auth test secret, guessed' };
const LARGE = 4 * EAGER_MAX; // above the eager limit: announced, then pulled by the receiver

function pattern(size: number, seed: number): Buffer {
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i++) data[i] = (i * 13 + seed) & 0xff;
  return data;
}

/** The endpoint's next 'authFailed' event (listen before the failure: bounded by the test's timeout). */
function nextAuthFailure(endpoint: Endpoint): Promise<AuthFailedInfo> {
  return new Promise((resolve) => endpoint.once('authFailed', resolve));
}

/** `size` bytes put by `sender` land in a fresh buffer of `receiver`'s mailbox, byte-exact. */
async function expectDelivered(receiver: Endpoint, sender: Endpoint, size: number, seed: number): Promise<void> {
  const mailbox = receiver.openMailbox(VADDR + BigInt(seed), {});
  mailbox.post(size);
  const data = pattern(size, seed);
  await sender.put(receiver.address, VADDR + BigInt(seed), data, WAIT);
  const done = await mailbox.next(WAIT);
  expect(done.epoch).toBe(1);
  expect(Buffer.from(done.buffer).equals(data)).toBe(true);
}

describeInGuest('peer authentication over verbs', () => {
  jest.setTimeout(180_000);

  describe.each(PROGRESS_MODES)('%s progress', (progress: ProgressMode) => {
    test('peers with the same secret connect; eager and pulled puts land byte-exact', async () => {
      const receiver = await verbsEndpoint(endpoints, progress, { auth: SECRET });
      const sender = await verbsEndpoint(endpoints, progress, { auth: SECRET });
      expect(await sender.connect(receiver.address, WAIT)).toBe(receiver.nodeId);
      await expectDelivered(receiver, sender, 4096, 1);
      await expectDelivered(receiver, sender, LARGE, 2);
    });

    test('a peer with another secret is refused before anything is placed; the acceptor keeps serving', async () => {
      const receiver = await verbsEndpoint(endpoints, progress, { auth: SECRET });
      const friend = await verbsEndpoint(endpoints, progress, { auth: SECRET });
      const stranger = await verbsEndpoint(endpoints, progress, { auth: OTHER });
      const mailbox = receiver.openMailbox(VADDR, {});
      mailbox.post(LARGE);

      const refused = nextAuthFailure(receiver);
      const strangerSaw = nextAuthFailure(stranger);
      await expectRejects(stranger.connect(receiver.address, WAIT), 'ERR_RVMA_AUTH', /proof does not match/);
      expect((await refused).message).toMatch(/proof does not match/);
      expect((await refused).message).toContain(stranger.nodeId);
      expect((await strangerSaw).peer).toBe(receiver.address);
      // Each put dials anew and is refused the same way: nothing redials on its own.
      await expectRejects(stranger.put(receiver.address, VADDR, Buffer.alloc(64, 0xee), { offset: 0, ...WAIT }), 'ERR_RVMA_AUTH');
      await expectRejects(stranger.put(receiver.address, VADDR, Buffer.alloc(LARGE, 0xee), WAIT), 'ERR_RVMA_AUTH');

      // The first bytes to reach the buffer are the friend's: it completes once, with them only.
      const data = pattern(LARGE, 3);
      await friend.put(receiver.address, VADDR, data, WAIT);
      const done = await mailbox.next(WAIT);
      expect(done.epoch).toBe(1);
      expect(Buffer.from(done.buffer).equals(data)).toBe(true);
      await expectDelivered(receiver, friend, 256, 4);
    });

    test.each([
      ['the acceptor authenticates, the dialer does not', { auth: SECRET }, {}, /has no auth secret/, /does not authenticate/],
      ['the dialer authenticates, the acceptor does not', {}, { auth: SECRET }, /does not authenticate/, /has no auth secret/],
    ])('%s: ERR_RVMA_AUTH on both ends', async (_name, acceptorOptions, dialerOptions, dialerText, acceptorText) => {
      const acceptor = await verbsEndpoint(endpoints, progress, acceptorOptions);
      const dialer = await verbsEndpoint(endpoints, progress, dialerOptions);
      const mailbox = acceptor.openMailbox(VADDR, {});
      mailbox.post(64);
      const refused = nextAuthFailure(acceptor);
      await expectRejects(dialer.connect(acceptor.address, WAIT), 'ERR_RVMA_AUTH', dialerText);
      expect((await refused).message).toMatch(acceptorText);
      await expectRejects(dialer.put(acceptor.address, VADDR, Buffer.alloc(64, 0xee), WAIT), 'ERR_RVMA_AUTH');
      // A peer configured like the acceptor is still served, into the same untouched buffer.
      const friend = await verbsEndpoint(endpoints, progress, acceptorOptions);
      const data = pattern(64, 5);
      await friend.put(acceptor.address, VADDR, data, WAIT);
      const done = await mailbox.next(WAIT);
      expect(done.epoch).toBe(1);
      expect(Buffer.from(done.buffer).equals(data)).toBe(true);
    });
  });
});
