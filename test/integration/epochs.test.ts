// Epochs end by count: bytes placed (default threshold: the buffer's size) or puts placed
// (default threshold: 1), per mailbox or per buffer; incEpoch() ends one early.
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { expectThrows } from '../helpers/errors';
import { asBuffer, pattern } from '../helpers/data';

const endpoints = trackEndpoints();

describe.each(PROGRESS_MODES)('epochs (%s progress)', (progress) => {
  test('bytes epoch: the default threshold is the buffer size', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(32);
    const data = pattern(32, 1);
    await sender.put(receiver, VADDR, data.subarray(0, 31), { offset: 0 });
    // After a put resolved, any epoch it ended is already in the completion words.
    expect(mailbox.epoch).toBe(0);
    await sender.put(receiver, VADDR, data.subarray(31), { offset: 31 });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: 32, ops: 2 });
    expect(asBuffer(done.buffer)).toEqual(data);
  });

  test('bytes epoch: an explicit mailbox threshold ends the epoch once reached or passed', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { threshold: 10 });
    mailbox.post(100);
    mailbox.post(100);
    await sender.put(receiver, VADDR, Buffer.alloc(4, 1), { offset: 0 });
    await sender.put(receiver, VADDR, Buffer.alloc(4, 2), { offset: 4 });
    expect(mailbox.epoch).toBe(0);
    await sender.put(receiver, VADDR, Buffer.alloc(4, 3), { offset: 8 }); // 12 >= 10
    const first = await mailbox.next({ timeout: 2000 });
    expect(first).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: 12, ops: 3 });
    // The second buffer starts counting from zero.
    await sender.put(receiver, VADDR, Buffer.alloc(10, 4), { offset: 50 });
    const second = await mailbox.next({ timeout: 2000 });
    expect(second).toMatchObject({ epoch: 2, bufferIndex: 1, bytes: 10, ops: 1 });
    const expected = Buffer.alloc(100);
    expected.fill(4, 50, 60);
    expect(asBuffer(second.buffer)).toEqual(expected);
  });

  test('ops epoch: the default threshold is one put per buffer', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    const buffers = [mailbox.post(16), mailbox.post(16), mailbox.post(16)];
    for (let i = 0; i < 3; i++) await sender.put(receiver, VADDR, Buffer.alloc(i + 1, i + 1), { offset: 0 });
    for (let i = 0; i < 3; i++) {
      const done = await mailbox.next({ timeout: 2000 });
      expect(done).toMatchObject({ epoch: i + 1, bufferIndex: i, bytes: i + 1, ops: 1 });
      expect(done.buffer).toBe(buffers[i]);
      const expected = Buffer.alloc(16);
      expected.fill(i + 1, 0, i + 1);
      expect(asBuffer(done.buffer)).toEqual(expected);
    }
  });

  test('ops epoch: an explicit threshold counts puts, whatever their size', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 3 });
    mailbox.post(64);
    await sender.put(receiver, VADDR, Buffer.alloc(20, 1), { offset: 0 });
    await sender.put(receiver, VADDR, Buffer.alloc(1, 2), { offset: 20 });
    expect(mailbox.epoch).toBe(0);
    await sender.put(receiver, VADDR, Buffer.alloc(7, 3), { offset: 21 });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: 28, ops: 3 });
  });

  test('per-buffer thresholds override the mailbox threshold (bytes)', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { threshold: 8 });
    mailbox.post(16, { threshold: 4 });
    mailbox.post(16); // the mailbox's 8
    mailbox.post(16, { threshold: 16n });
    const expectedBytes = [4, 8, 16];
    for (let i = 0; i < 3; i++) {
      // 4-byte puts until this buffer's epoch ends; each is awaited so none spills over.
      for (let offset = 0; offset < expectedBytes[i]; offset += 4) {
        expect(mailbox.epoch).toBe(i);
        await sender.put(receiver, VADDR, Buffer.alloc(4, i + 1), { offset });
      }
      const done = await mailbox.next({ timeout: 2000 });
      expect(done).toMatchObject({ epoch: i + 1, bufferIndex: i, bytes: expectedBytes[i], ops: expectedBytes[i] / 4 });
    }
  });

  test('per-buffer thresholds override the mailbox threshold (ops)', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
    mailbox.post(64, { threshold: 1 });
    mailbox.post(64);
    mailbox.post(64, { threshold: 3 });
    const expectedOps = [1, 2, 3];
    for (let i = 0; i < 3; i++) {
      for (let k = 0; k < expectedOps[i]; k++) {
        expect(mailbox.epoch).toBe(i);
        await sender.put(receiver, VADDR, Buffer.alloc(2, k + 1), { offset: k * 2 });
      }
      const done = await mailbox.next({ timeout: 2000 });
      expect(done).toMatchObject({ epoch: i + 1, bufferIndex: i, bytes: expectedOps[i] * 2, ops: expectedOps[i] });
    }
  });

  test('incEpoch() retires a partly filled buffer with what landed so far', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    const first = mailbox.post(32);
    const second = mailbox.post(32);
    const data = pattern(5, 9);
    await sender.put(receiver, VADDR, data.subarray(0, 2), { offset: 0 });
    await sender.put(receiver, VADDR, data.subarray(2), { offset: 2 });
    mailbox.incEpoch();
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: 5, ops: 2 });
    expect(done.buffer).toBe(first);
    expect(asBuffer(done.buffer).subarray(0, 5)).toEqual(data);
    // The next buffer takes over: a put now lands there.
    await sender.put(receiver, VADDR, Buffer.alloc(32, 7), { offset: 0 });
    const next = await mailbox.next({ timeout: 2000 });
    expect(next).toMatchObject({ epoch: 2, bufferIndex: 1, bytes: 32, ops: 1 });
    expect(next.buffer).toBe(second);
  });

  test('incEpoch() records zero counts for an untouched buffer, and what landed for an ops buffer', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 5 });
    mailbox.post(16);
    mailbox.post(16);
    mailbox.incEpoch();
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: 0, ops: 0 });
    await sender.put(receiver, VADDR, Buffer.alloc(3, 1), { offset: 0 });
    mailbox.incEpoch();
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 2, bufferIndex: 1, bytes: 3, ops: 1 });
  });

  test('incEpoch() with no buffer posted throws ERR_RVMA_NO_BUFFER and changes nothing', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    expectThrows(() => mailbox.incEpoch(), 'ERR_RVMA_NO_BUFFER', /0x10000/);
    expect(mailbox.epoch).toBe(0);
    // Once every posted buffer retired there is again no buffer.
    mailbox.post(8);
    await sender.put(receiver, VADDR, Buffer.alloc(1), { offset: 0 });
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1 });
    expectThrows(() => mailbox.incEpoch(), 'ERR_RVMA_NO_BUFFER');
    expect(mailbox.epoch).toBe(1);
  });
});
