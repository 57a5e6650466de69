// Completion words: native memory the JS side reads without a native call. They must agree
// with the completion records, and in 'thread' progress they change while JS is busy.
import { PROGRESS_MODES, VADDR, pollUntil, trackEndpoints } from '../helpers/endpoints';

const endpoints = trackEndpoints();

describe.each(PROGRESS_MODES)('completion words (%s progress)', (progress) => {
  test('start at zero and match every completion record', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
    expect(mailbox.epoch).toBe(0);
    expect(mailbox.lastCompletion()).toEqual({ epoch: 0, bufferIndex: 0, bytes: 0, ops: 0 });
    for (let i = 0; i < 3; i++) mailbox.post(64);
    for (let i = 0; i < 3; i++) {
      await sender.put(receiver, VADDR, Buffer.alloc(i + 1), { offset: 0 });
      await sender.put(receiver, VADDR, Buffer.alloc(10 * (i + 1)), { offset: 8 });
      const done = await mailbox.next({ timeout: 2000 });
      expect(done).toMatchObject({ epoch: i + 1, bufferIndex: i, bytes: 11 * (i + 1), ops: 2 });
      expect(mailbox.epoch).toBe(done.epoch);
      expect(mailbox.lastCompletion()).toEqual({
        epoch: done.epoch,
        bufferIndex: done.bufferIndex,
        bytes: done.bytes,
        ops: done.ops,
      });
    }
  });

  test('change without awaiting next(): polling mailbox.epoch sees each epoch end', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    for (let i = 0; i < 3; i++) mailbox.post(16);
    const puts: Promise<void>[] = [];
    for (let i = 0; i < 3; i++) {
      puts.push(sender.put(receiver, VADDR, Buffer.alloc(16, i + 1), { offset: 0 }));
      expect(await pollUntil(() => mailbox.epoch === i + 1, 100_000)).toBe(true);
      expect(mailbox.lastCompletion()).toEqual({ epoch: i + 1, bufferIndex: i, bytes: 16, ops: 1 });
    }
    await Promise.all(puts);
    // The records agree with what the words showed.
    for (let i = 0; i < 3; i++) expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: i + 1, bytes: 16 });
  });

  test('a closed mailbox keeps reporting its own epoch', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(8);
    mailbox.post(8);
    await sender.put(receiver, VADDR, Buffer.alloc(3), { offset: 0 });
    expect(mailbox.epoch).toBe(1);
    mailbox.close();
    expect(mailbox.epoch).toBe(1);
    // Another mailbox completing must not show through.
    const other = receiver.openMailbox(VADDR + 1n, { epoch: 'ops' });
    other.post(8);
    other.post(8);
    await sender.put(receiver, VADDR + 1n, Buffer.alloc(5), { offset: 0 });
    await sender.put(receiver, VADDR + 1n, Buffer.alloc(5), { offset: 0 });
    expect(other.epoch).toBe(2);
    expect(mailbox.epoch).toBe(1);
  });

  // close() releases the mailbox's completion-word slot, and another mailbox may reuse it.
  test("lastCompletion() of a closed mailbox keeps its own record, not the slot's next owner's", async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(8);
    await sender.put(receiver, VADDR, Buffer.alloc(3), { offset: 0 });
    const own = mailbox.lastCompletion();
    expect(own).toEqual({ epoch: 1, bufferIndex: 0, bytes: 3, ops: 1 });
    mailbox.close();
    const other = receiver.openMailbox(VADDR + 1n, { epoch: 'ops' });
    other.post(8);
    other.post(8);
    await sender.put(receiver, VADDR + 1n, Buffer.alloc(5), { offset: 0 });
    await sender.put(receiver, VADDR + 1n, Buffer.alloc(5), { offset: 0 });
    expect(other.lastCompletion()).toEqual({ epoch: 2, bufferIndex: 1, bytes: 5, ops: 1 });
    expect(mailbox.lastCompletion()).toEqual(own);
    expect(mailbox.epoch).toBe(1);
  });
});

describe('completion words change while JS never yields (thread progress)', () => {
  test('a put lands and its epoch ends while the JS thread spins', async () => {
    const { receiver, sender } = await endpoints.pair('thread');
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    const buffer = mailbox.post(8);
    const put = sender.put(receiver, VADDR, Buffer.from([1, 2, 3, 4]), { offset: 2 });
    // No await in this loop: only the progress thread can change the words.
    let spins = 0;
    while (mailbox.epoch === 0 && spins < 100_000_000) spins++;
    expect(mailbox.epoch).toBe(1);
    expect(mailbox.lastCompletion()).toEqual({ epoch: 1, bufferIndex: 0, bytes: 4, ops: 1 });
    expect(Buffer.from(buffer)).toEqual(Buffer.from([0, 0, 1, 2, 3, 4, 0, 0]));
    await put;
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1, bytes: 4, ops: 1 });
  });
});
