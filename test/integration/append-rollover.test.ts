// Appends at a buffer boundary while another put is still being copied in. The count
// decides the epoch, not the timing of the copies: with an ops threshold of 1 a second put
// belongs in the next buffer, and an append that does not fit a buffer that an earlier
// append filled exactly belongs in the next buffer too; it is not refused.
//
// The overlap is arranged, not hoped for: sender A puts a large record into fresh (not yet
// faulted-in) memory, which makes its copy slow; once A's bytes start to appear, sender B
// puts a small record. In 'thread' progress B is placed on its own thread while A still
// copies. In 'loop' progress A is placed before put() returns, so these pin the plain order.
import { type Completion, type Endpoint, type Mailbox } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';

const endpoints = trackEndpoints();

const BIG = 40 * 1024 * 1024; // above malloc's mmap threshold: every allocation is fresh pages
const SMALL = 64;
// Loop progress has no concurrency to vary; thread progress retries in case a round
// happened not to overlap.
const ROUNDS = { loop: 1, thread: 3 };
// The copy may run forwards or backwards: watch bytes spread over the whole range.
const PROBES = Array.from({ length: 15 }, (_, k) => ((k + 1) * BIG) / 16);

/** Spins, without yielding, until some of A's bytes are visible (bounded by iterations). */
function spinUntilCopying(buffer: Uint8Array): boolean {
  for (let i = 0; i < 5_000_000; i++) {
    for (const probe of PROBES) if (Atomics.load(buffer, probe) !== 0) return true;
  }
  return false;
}

async function drain(mailbox: Mailbox): Promise<[number, number, number][]> {
  const records: Completion[] = [];
  // All puts resolved, so the words already count every epoch that ended.
  for (let i = mailbox.epoch; i > 0; i--) records.push(await mailbox.next({ timeout: 2000 }));
  return records.map((r) => [r.bufferIndex, r.ops, r.bytes]);
}

const bigRecord = Buffer.alloc(BIG, 0x5a);

async function overlap(a: Endpoint, b: Endpoint, receiver: Endpoint, vaddr: bigint, first: Uint8Array) {
  const putA = a.put(receiver, vaddr, bigRecord, { append: true });
  expect(spinUntilCopying(first)).toBe(true);
  const putB = b.put(receiver, vaddr, Buffer.alloc(SMALL, 0xb7), { append: true });
  const outcomes = await Promise.allSettled([putA, putB]);
  return outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : String((o.reason as { code?: string }).code)));
}

describe.each(PROGRESS_MODES)('append at a buffer boundary during another copy (%s progress)', (progress) => {

  test('ops epoch, threshold 1: the second put goes to the next buffer', async () => {
    const receiver = await endpoints.create({ progress });
    const [a, b] = await endpoints.many(progress, 2);
    for (let round = 0; round < ROUNDS[progress]; round++) {
      const vaddr = VADDR + BigInt(round);
      const mailbox = receiver.openMailbox(vaddr, { epoch: 'ops' });
      const first = mailbox.post(Buffer.alloc(BIG + SMALL)); // room for both: only the count may stop B
      const second = mailbox.post(Buffer.alloc(SMALL));
      expect(await overlap(a, b, receiver, vaddr, first)).toEqual(['ok', 'ok']);
      expect(await drain(mailbox)).toEqual([
        [0, 1, BIG],
        [1, 1, SMALL],
      ]);
      expect(Buffer.from(second)).toEqual(Buffer.alloc(SMALL, 0xb7));
      mailbox.close();
    }
  });

  test('bytes epoch: an append after a buffer was filled exactly goes to the next buffer', async () => {
    const receiver = await endpoints.create({ progress });
    const [a, b] = await endpoints.many(progress, 2);
    for (let round = 0; round < ROUNDS[progress]; round++) {
      const vaddr = VADDR + BigInt(round);
      const mailbox = receiver.openMailbox(vaddr);
      const first = mailbox.post(Buffer.alloc(BIG)); // A fills it exactly
      const second = mailbox.post(Buffer.alloc(SMALL));
      expect(await overlap(a, b, receiver, vaddr, first)).toEqual(['ok', 'ok']);
      expect(await drain(mailbox)).toEqual([
        [0, 1, BIG],
        [1, 1, SMALL],
      ]);
      expect(Buffer.from(second)).toEqual(Buffer.alloc(SMALL, 0xb7));
      mailbox.close();
    }
  });
});
