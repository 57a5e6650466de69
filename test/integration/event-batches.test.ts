// Completions reach JS in batches through one reused array (a batch too big for it gets its
// own). Batches of every size must deliver each event exactly once, and nothing stale.
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer } from '../helpers/data';

const endpoints = trackEndpoints();

describe.each(PROGRESS_MODES)('event batches (%s progress)', (progress) => {
  test('thousands of puts issued at once, then a few: every put settles once, bytes exact', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const many = 3000;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: many });
    mailbox.post(many * 4);
    const settled: number[] = new Array(many).fill(0);
    const record = (i: number): Buffer => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(i);
      return b;
    };
    await Promise.all(
      Array.from({ length: many }, (_, i) => sender.put(receiver, VADDR, record(i), { append: true, timeout: 10_000 }).then(() => settled[i]++)),
    );
    expect(settled.every((n) => n === 1)).toBe(true);
    const big = await mailbox.next({ timeout: 5000 });
    expect(big).toMatchObject({ epoch: 1, ops: many, bytes: many * 4 });
    const landed = asBuffer(big.buffer);
    const seen = Array.from({ length: many }, (_, i) => landed.readUInt32LE(i * 4)).sort((a, b) => a - b);
    expect(seen).toEqual(Array.from({ length: many }, (_, i) => i));

    // Small batches after the big one: the reused array's old contents must not replay.
    const small = receiver.openMailbox(VADDR + 1n, { epoch: 'ops', threshold: 1 });
    for (let i = 0; i < 3; i++) small.post(4);
    for (let i = 0; i < 3; i++) await sender.put(receiver, VADDR + 1n, record(i));
    for (let i = 0; i < 3; i++) expect(await small.next({ timeout: 2000 })).toMatchObject({ epoch: i + 1, ops: 1 });
    expect(small.postedCount).toBe(0);
    await expect(mailbox.next({ timeout: 50 })).rejects.toMatchObject({ code: 'ERR_RVMA_TIMEOUT' });
  });
});
