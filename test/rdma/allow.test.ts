// `allow` over verbs in the Soft-RoCE guest: eager puts, large (pulled) puts and raw writes
// from a node not on the list are refused with ERR_RVMA_FORBIDDEN before a byte is placed, and
// the region is not lent to it; the allowed node is served on the same endpoint.
import { type Endpoint, type ProgressMode } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { EAGER_MAX, describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const WAIT = { timeout: 30_000 };

async function trio(progress: ProgressMode): Promise<{ receiver: Endpoint; friend: Endpoint; stranger: Endpoint }> {
  return { receiver: await verbsEndpoint(endpoints, progress), friend: await verbsEndpoint(endpoints, progress), stranger: await verbsEndpoint(endpoints, progress) };
}

describeInGuest('allow over verbs', () => {
  jest.setTimeout(180_000);

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    test('eager and large puts from a node not allowed are refused; nothing is placed', async () => {
      const { receiver, friend, stranger } = await trio(progress);
      const size = 4 * EAGER_MAX; // above the eager limit: announced, then pulled by the receiver
      const mailbox = receiver.openMailbox(VADDR, { allow: [friend.nodeId] });
      mailbox.post(size);
      await expectRejects(stranger.put(receiver.address, VADDR, Buffer.alloc(64, 0xee), { offset: 0, ...WAIT }), 'ERR_RVMA_FORBIDDEN');
      await expectRejects(stranger.put(receiver.address, VADDR, Buffer.alloc(size, 0xee), WAIT), 'ERR_RVMA_FORBIDDEN');
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i++) data[i] = (i * 13) & 0xff;
      await friend.put(receiver.address, VADDR, data, WAIT);
      const done = await mailbox.next(WAIT);
      expect(done.epoch).toBe(1);
      expect(Buffer.from(done.buffer).equals(data)).toBe(true);
    });

    test('a raw write from a node not allowed is refused, before and after the region is lent to the friend', async () => {
      const { receiver, friend, stranger } = await trio(progress);
      const region = receiver.registerRegion(4096, { allow: [friend.nodeId] });
      await expectRejects(stranger.rawWrite(receiver.address, region.key, 0, Buffer.alloc(64, 0xee), WAIT), 'ERR_RVMA_FORBIDDEN');
      await friend.rawWrite(receiver.address, region.key, 64, Buffer.alloc(64, 0x11), WAIT);
      await expectRejects(stranger.rawWrite(receiver.address, region.key, 0, Buffer.alloc(64, 0xee), WAIT), 'ERR_RVMA_FORBIDDEN');
      expect(Buffer.from(region.buffer).subarray(0, 128)).toEqual(Buffer.concat([Buffer.alloc(64), Buffer.alloc(64, 0x11)]));
    });
  });
});
