// Buffers retire strictly in the order they were posted, and every completion hands back
// the very buffer that was posted.
import { type Completion } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer } from '../helpers/data';

const endpoints = trackEndpoints();

describe.each(PROGRESS_MODES)('FIFO retirement (%s progress)', (progress) => {
  test('completions name buffers 0, 1, 2 with epochs 1, 2, 3 and return the posted arrays', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    const posted = [mailbox.post(8), mailbox.post(8), mailbox.post(8)];
    expect(mailbox.postedCount).toBe(3);
    for (let i = 0; i < 3; i++) await sender.put(receiver, VADDR, Buffer.alloc(8, 0x10 + i), { offset: 0 });
    for (let i = 0; i < 3; i++) {
      const done = await mailbox.next({ timeout: 2000 });
      expect(done).toMatchObject({ vaddr: VADDR, epoch: i + 1, bufferIndex: i, bytes: 8, ops: 1 });
      expect(done.buffer).toBe(posted[i]);
      expect(asBuffer(done.buffer)).toEqual(Buffer.alloc(8, 0x10 + i));
    }
    expect(mailbox.postedCount).toBe(0);
  });

  test('an incEpoch() on the head retires it before later buffers', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
    const posted = [mailbox.post(4), mailbox.post(4)];
    await sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0 });
    mailbox.incEpoch();
    await sender.put(receiver, VADDR, Buffer.from([2]), { offset: 0 });
    await sender.put(receiver, VADDR, Buffer.from([3]), { offset: 1 });
    const first = await mailbox.next({ timeout: 2000 });
    const second = await mailbox.next({ timeout: 2000 });
    expect(first).toMatchObject({ epoch: 1, bufferIndex: 0, ops: 1, bytes: 1 });
    expect(first.buffer).toBe(posted[0]);
    expect(second).toMatchObject({ epoch: 2, bufferIndex: 1, ops: 2, bytes: 2 });
    expect(second.buffer).toBe(posted[1]);
    expect(asBuffer(second.buffer)).toEqual(Buffer.from([2, 3, 0, 0]));
  });

  test('a retired buffer posted again gets the next index and comes back as the same array', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    const buffer = mailbox.post(4);
    await sender.put(receiver, VADDR, Buffer.from([1, 1, 1, 1]), { offset: 0 });
    const first = await mailbox.next({ timeout: 2000 });
    expect(first.buffer).toBe(buffer);
    expect(mailbox.post(first.buffer)).toBe(buffer);
    await sender.put(receiver, VADDR, Buffer.from([2, 2]), { offset: 2 });
    const second = await mailbox.next({ timeout: 2000 });
    expect(second).toMatchObject({ epoch: 2, bufferIndex: 1, bytes: 2, ops: 1 });
    expect(second.buffer).toBe(buffer);
    expect(asBuffer(buffer)).toEqual(Buffer.from([1, 1, 2, 2]));
  });

  test('64 buffers filled by concurrent puts retire in posting order', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const count = 64;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', maxBuffers: count });
    const posted = Array.from({ length: count }, () => mailbox.post(4));
    await Promise.all(
      Array.from({ length: count }, (_, i) => sender.put(receiver, VADDR, new Uint32Array([i]), { offset: 0 })),
    );
    const seen: Completion[] = [];
    for (let i = 0; i < count; i++) seen.push(await mailbox.next({ timeout: 2000 }));
    expect(seen.map((c) => c.epoch)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    expect(seen.map((c) => c.bufferIndex)).toEqual(Array.from({ length: count }, (_, i) => i));
    seen.forEach((c, i) => expect(c.buffer).toBe(posted[i]));
    // One put per buffer, none lost or doubled (which put went where is not part of the contract).
    const values = seen.map((c) => asBuffer(c.buffer).readUInt32LE(0)).sort((a, b) => a - b);
    expect(values).toEqual(Array.from({ length: count }, (_, i) => i));
  });
});
