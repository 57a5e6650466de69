// The verbs option group at work: slot size (the eager / RDMA-read switch), slots (ring
// credits), maxPutBytes. Runs inside the Soft-RoCE guest only.
import { type RvmaError } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer, makeRecord, parseRecords, pattern } from '../helpers/data';
import { expectRejects } from '../helpers/errors';
import { describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const WAIT = { timeout: 60_000 };

describeInGuest('verbs options', () => {
  jest.setTimeout(180_000);

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    test('the smaller slotBytes of the two sides sets the eager limit; bytes are exact on both sides of it', async () => {
      const receiver = await verbsEndpoint(endpoints, progress, { verbs: { slotBytes: 4096 } });
      const sender = await verbsEndpoint(endpoints, progress, { verbs: { slotBytes: 1024 } });
      const sizes = [1, 991, 992, 993, 1024, 4064, 4065, 100_000];
      for (const [i, size] of sizes.entries()) {
        const mailbox = receiver.openMailbox(VADDR + BigInt(i));
        mailbox.post(size);
        const data = pattern(size, i + 7);
        await sender.put(receiver.address, VADDR + BigInt(i), data, WAIT);
        const done = await mailbox.next(WAIT);
        expect(done).toMatchObject({ bytes: size, ops: 1 });
        expect(asBuffer(done.buffer).equals(data)).toBe(true);
      }
    });

    test('two slots: hundreds of puts and raw writes wait for credits and all land once; refusals give their credits back', async () => {
      const receiver = await verbsEndpoint(endpoints, progress);
      const sender = await verbsEndpoint(endpoints, progress, { verbs: { slots: 2 } });
      const refused = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          sender.put(receiver.address, VADDR, Buffer.alloc(i % 2 ? 8 : 65536)).catch((e: RvmaError) => e.code),
        ),
      );
      expect(refused).toEqual(Array(10).fill('ERR_RVMA_NO_MAILBOX'));

      const count = 300;
      const records = Array.from({ length: count }, (_, seq) => makeRecord(0, seq));
      const total = records.reduce((n, r) => n + r.length, 0);
      const appended = receiver.openMailbox(VADDR, { threshold: total });
      appended.post(total);
      const large = receiver.openMailbox(VADDR + 1n, { epoch: 'ops', threshold: 4 });
      large.post(4 * 65536);
      const region = receiver.registerRegion(20 * 64);
      await Promise.all([
        ...records.map((r) => sender.put(receiver.address, VADDR, r, { append: true, ...WAIT })),
        ...[0, 1, 2, 3].map((i) => sender.put(receiver.address, VADDR + 1n, pattern(65536, i), { offset: i * 65536, ...WAIT })),
        ...Array.from({ length: 20 }, (_, i) => sender.rawWrite(receiver.address, region.key, i * 64, pattern(64, 100 + i), WAIT)),
      ]);
      const done = await appended.next(WAIT);
      expect(done).toMatchObject({ bytes: total, ops: count });
      const parsed = parseRecords(done.buffer, total);
      expect(parsed.errors).toEqual([]);
      expect(new Set(parsed.keys).size).toBe(count);
      const big = await large.next(WAIT);
      expect(big).toMatchObject({ bytes: 4 * 65536, ops: 4 });
      expect(asBuffer(big.buffer).equals(Buffer.concat([0, 1, 2, 3].map((i) => pattern(65536, i))))).toBe(true);
      const expected = Buffer.concat(Array.from({ length: 20 }, (_, i) => pattern(64, 100 + i)));
      expect(asBuffer(region.buffer).equals(expected)).toBe(true);
    });

    test('maxPutBytes refuses larger puts and raw writes, eager and read alike, and the connection stays up', async () => {
      const receiver = await verbsEndpoint(endpoints, progress, { verbs: { maxPutBytes: 1000 } });
      const sender = await verbsEndpoint(endpoints, progress);
      const mailbox = receiver.openMailbox(VADDR);
      mailbox.post(1 << 20);
      await expectRejects(sender.put(receiver.address, VADDR, Buffer.alloc(1001), WAIT), 'ERR_RVMA_TOO_LARGE');
      await expectRejects(sender.put(receiver.address, VADDR, Buffer.alloc(1 << 20), WAIT), 'ERR_RVMA_TOO_LARGE');
      const data = pattern(1000, 3);
      await sender.put(receiver.address, VADDR, data, { offset: (1 << 20) - 1000, ...WAIT });
      mailbox.incEpoch();
      const done = await mailbox.next(WAIT);
      expect(done).toMatchObject({ bytes: 1000, ops: 1 });
      expect(asBuffer(done.buffer).subarray((1 << 20) - 1000).equals(data)).toBe(true);

      const region = receiver.registerRegion(1 << 20);
      await expectRejects(sender.rawWrite(receiver.address, region.key, 0n, Buffer.alloc(1001), WAIT), 'ERR_RVMA_TOO_LARGE');
      await expectRejects(sender.rawWrite(receiver.address, region.key, 0n, Buffer.alloc(1 << 20), WAIT), 'ERR_RVMA_TOO_LARGE');
      await sender.rawWrite(receiver.address, region.key, 8n, data, WAIT);
      expect(await region.next(WAIT)).toEqual({ offset: 8, bytes: 1000 });
      expect(asBuffer(region.buffer).subarray(8, 1008).equals(data)).toBe(true);
    });
  });

  test('busyPollUs (thread progress): 300 round trips of eager and read puts, every byte exact, and close while polling', async () => {
    const verbs = { busyPollUs: 500 };
    const a = await verbsEndpoint(endpoints, 'thread', { verbs });
    const b = await verbsEndpoint(endpoints, 'thread', { verbs });
    const inbox = { a: a.openMailbox(VADDR, { epoch: 'ops', threshold: 1 }), b: b.openMailbox(VADDR, { epoch: 'ops', threshold: 1 }) };
    for (let i = 0; i < 300; i++) {
      const size = i % 10 === 9 ? 64 * 1024 : 1 + (i % 200);
      const [from, to, box] = i % 2 === 0 ? [a, b, inbox.b] : [b, a, inbox.a];
      const posted = box.post(size);
      const data = pattern(size, i);
      await from.put(to.address, VADDR, data, WAIT);
      const done = await box.next(WAIT);
      expect(done.buffer).toBe(posted);
      expect(asBuffer(done.buffer).equals(data)).toBe(true);
    }
    // Closing right after traffic stops a thread that is still polling.
    await Promise.all([a.close(), b.close()]);
  });
});
