// A large payload split into chunks and put in random order: completion is decided by the
// count, so arrival order does not matter, and the epoch ends exactly once, with the last chunk.
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer, pattern, rng, shuffle } from '../helpers/data';

const endpoints = trackEndpoints();

const SIZE = 1024 * 1024;
const CHUNKS = 256;
const SENDERS = 4;

/** Chunks of varied sizes that tile [0, SIZE) exactly. */
function chunks(payload: Buffer, seed: number): { offset: number; data: Buffer }[] {
  const next = rng(seed);
  const cuts = new Set<number>();
  while (cuts.size < CHUNKS - 1) cuts.add(1 + Math.floor(next() * (SIZE - 1)));
  const bounds = [0, ...[...cuts].sort((a, b) => a - b), SIZE];
  return bounds.slice(0, -1).map((offset, i) => ({ offset, data: payload.subarray(offset, bounds[i + 1]) }));
}

describe.each(PROGRESS_MODES)('shuffled-offset puts (%s progress)', (progress) => {
  test('1 MiB in 256 chunks, all in flight at once from 4 senders: one completion with the right bytes', async () => {
    const receiver = await endpoints.create({ progress });
    const senders = await endpoints.many(progress, SENDERS);
    const payload = pattern(SIZE, 11);
    const mailbox = receiver.openMailbox(VADDR);
    const buffer = mailbox.post(SIZE);
    mailbox.post(16); // a second buffer: a spurious extra epoch would retire it
    const order = shuffle(chunks(payload, 12), 13);
    await Promise.all(order.map((c, i) => senders[i % SENDERS].put(receiver, VADDR, c.data, { offset: c.offset })));
    // Every put resolved, so every epoch they ended is already in the completion words.
    expect(mailbox.epoch).toBe(1);
    const done = await mailbox.next({ timeout: 4000 });
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: SIZE, ops: CHUNKS });
    expect(done.buffer).toBe(buffer);
    expect(asBuffer(done.buffer).equals(payload)).toBe(true);
    expect(mailbox.epoch).toBe(1);
    expect(mailbox.lastCompletion()).toEqual({ epoch: 1, bufferIndex: 0, bytes: SIZE, ops: CHUNKS });
    expect(mailbox.postedCount).toBe(1);
  });

  test('no completion before the last chunk: epoch stays 0 until it lands, then 1', async () => {
    const receiver = await endpoints.create({ progress });
    const senders = await endpoints.many(progress, SENDERS);
    const payload = pattern(SIZE, 21);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(SIZE);
    const order = shuffle(chunks(payload, 22), 23);
    const last = order.pop()!;
    await Promise.all(order.map((c, i) => senders[i % SENDERS].put(receiver, VADDR, c.data, { offset: c.offset })));
    expect(mailbox.epoch).toBe(0);
    expect(mailbox.lastCompletion()).toEqual({ epoch: 0, bufferIndex: 0, bytes: 0, ops: 0 });
    await senders[0].put(receiver, VADDR, last.data, { offset: last.offset });
    expect(mailbox.epoch).toBe(1);
    const done = await mailbox.next({ timeout: 4000 });
    expect(done).toMatchObject({ epoch: 1, bytes: SIZE, ops: CHUNKS });
    expect(asBuffer(done.buffer).equals(payload)).toBe(true);
  });
});
