// Batched work over verbs (Soft-RoCE guest): many puts made in one turn leave as one chain of
// work requests with few completions asked for, and their answers come back gathered into
// Acks messages. Every put must still be answered exactly once, with its own status.
import { type Endpoint, type ProgressMode } from '../../src';
import { RECORD_BYTES, RecordTally, failuresOf, issueWindowed, record } from '../helpers/counted';
import { asBuffer, pattern, rng } from '../helpers/data';
import { PROGRESS_MODES, VADDR, pollUntil, trackEndpoints } from '../helpers/endpoints';
import { EAGER_MAX, describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();

async function pair(progress: ProgressMode): Promise<{ receiver: Endpoint; sender: Endpoint }> {
  const receiver = await verbsEndpoint(endpoints, progress);
  const sender = await verbsEndpoint(endpoints, progress);
  await sender.connect(receiver.address, { timeout: 30_000 });
  return { receiver, sender };
}

describeInGuest('verbs batching', () => {
  jest.setTimeout(180_000);

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    test('4,096 counted appends in windows of 256: every record placed once, counts exact', async () => {
      const { receiver, sender } = await pair(progress);
      const count = 4096;
      const mailbox = receiver.openMailbox(VADDR, { epoch: 'bytes' });
      mailbox.post(count * RECORD_BYTES);
      const counter = sender.createPutCounter();
      const failures = failuresOf(counter);
      const state = await issueWindowed(counter, count, (i) =>
        sender.put(receiver.address, VADDR, record(0, i), { append: true, counter }),
      );
      expect(state).toEqual({ completed: count, failed: 0 });
      const done = await mailbox.next({ timeout: 60_000 });
      expect(done).toMatchObject({ bytes: count * RECORD_BYTES, ops: count });
      const tally = new RecordTally(1, count);
      tally.add(done.buffer, done.bytes);
      expect({ total: tally.total, duplicates: tally.duplicates, corrupt: tally.corrupt, missing: tally.missing(0) }).toEqual({
        total: count,
        duplicates: 0,
        corrupt: 0,
        missing: 0,
      });
      expect(failures).toEqual([]);
    });

    test('refusals inside a batch keep their own status and index', async () => {
      const { receiver, sender } = await pair(progress);
      const count = 1024;
      const random = rng(11);
      const bad = new Set<number>();
      for (let i = 0; i < count; i++) if (random() < 0.25) bad.add(i);
      const good = count - bad.size;
      const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(good) });
      mailbox.post(good * RECORD_BYTES);
      const counter = sender.createPutCounter();
      const failures = failuresOf(counter);
      // VADDR + 1 has no mailbox: its puts are answered NO_MAILBOX between placed ones.
      const state = await issueWindowed(counter, count, (i) =>
        sender.put(receiver.address, bad.has(i) ? VADDR + 1n : VADDR, record(0, i), { append: true, counter }),
      );
      expect(state).toEqual({ completed: good, failed: bad.size });
      expect(await pollUntil(() => failures.length >= bad.size)).toBe(true);
      expect(failures.every((f) => f.code === 'ERR_RVMA_NO_MAILBOX' && f.count === 1)).toBe(true);
      expect(failures.map((f) => f.index).sort((a, b) => a - b)).toEqual([...bad].sort((a, b) => a - b));
      const done = await mailbox.next({ timeout: 60_000 });
      expect(done).toMatchObject({ ops: good, bytes: good * RECORD_BYTES });
    });

    test('one turn of eager puts, large puts (RDMA READ) and raw writes: all settle, bytes exact', async () => {
      const { receiver, sender } = await pair(progress);
      const small = 200;
      const large = 4;
      const largeBytes = 256 * 1024;
      const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(small + large) });
      const total = small * EAGER_MAX + large * largeBytes;
      mailbox.post(total);
      const region = receiver.registerRegion(small * 64);
      const expected = pattern(total, 21);
      const raw = pattern(small * 64, 22);
      const puts: Promise<void>[] = [];
      // Interleaved in one turn: eager slots, READs and raw writes share the chain.
      for (let i = 0; i < small; i++) {
        puts.push(sender.put(receiver.address, VADDR, expected.subarray(i * EAGER_MAX, (i + 1) * EAGER_MAX), { offset: i * EAGER_MAX }));
        puts.push(sender.rawWrite(receiver.address, region.key, i * 64, raw.subarray(i * 64, (i + 1) * 64)));
        if (i % (small / large) === 0) {
          const k = i / (small / large);
          const at = small * EAGER_MAX + k * largeBytes;
          puts.push(sender.put(receiver.address, VADDR, expected.subarray(at, at + largeBytes), { offset: at }));
        }
      }
      await Promise.all(puts);
      const done = await mailbox.next({ timeout: 60_000 });
      expect(done).toMatchObject({ ops: small + large, bytes: total });
      expect(asBuffer(done.buffer).equals(expected)).toBe(true);
      expect(asBuffer(region.buffer).equals(raw)).toBe(true);
    });
  });
});
