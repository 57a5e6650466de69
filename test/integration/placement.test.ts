// Placement: bytes land exactly at the offset the sender asked for, nothing else changes.
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer, pattern, rng, shuffle } from '../helpers/data';

const endpoints = trackEndpoints();

describe.each(PROGRESS_MODES)('placement (%s progress)', (progress) => {
  test('puts at explicit offsets, sent out of order and concurrently, fill the buffer exactly', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    const posted = mailbox.post(64);
    const expected = pattern(64, 1);
    const ranges: [number, number][] = [
      [0, 16],
      [16, 40],
      [40, 48],
      [48, 64],
    ];
    const order = [3, 0, 2, 1];
    await Promise.all(
      order.map((i) => {
        const [start, end] = ranges[i];
        return sender.put(receiver, VADDR, expected.subarray(start, end), { offset: start });
      }),
    );
    const done = await mailbox.next({ timeout: 2000 });
    expect(done.buffer).toBe(posted);
    expect(done).toMatchObject({ vaddr: VADDR, epoch: 1, bufferIndex: 0, bytes: 64, ops: 4 });
    expect(asBuffer(done.buffer)).toEqual(expected);
  });

  test('bytes outside the written ranges keep their previous content', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { threshold: 20 });
    const own = Buffer.alloc(64, 0xee);
    expect(mailbox.post(own)).toBe(own); // used in place, not copied
    const a = pattern(10, 2);
    const b = pattern(10, 3);
    await sender.put(receiver, VADDR, a, { offset: 5 });
    await sender.put(receiver, VADDR, b, { offset: 40 });
    const done = await mailbox.next({ timeout: 2000 });
    const expected = Buffer.alloc(64, 0xee);
    a.copy(expected, 5);
    b.copy(expected, 40);
    expect(done.buffer).toBe(own);
    expect(done).toMatchObject({ bytes: 20, ops: 2 });
    expect(own).toEqual(expected);
  });

  test('a posted view with a byteOffset receives bytes inside the view only', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    const backing = Buffer.alloc(96, 0xaa);
    const view = backing.subarray(16, 80);
    mailbox.post(view);
    const data = pattern(64, 4);
    await sender.put(receiver, VADDR, data, { offset: 0 });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done.bytes).toBe(64);
    const expected = Buffer.alloc(96, 0xaa);
    data.copy(expected, 16);
    expect(backing).toEqual(expected);
  });

  test('data given as a TypedArray, DataView, ArrayBuffer or Buffer slice is sent byte for byte', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 4 });
    mailbox.post(64);
    const words = new Uint32Array([0x04030201, 0x08070605]);
    const source = pattern(40, 5);
    const dataView = new DataView(source.buffer, source.byteOffset + 3, 6);
    const arrayBuffer = new Uint8Array(pattern(5, 6)).buffer;
    const slice = source.subarray(20, 33);
    await sender.put(receiver, VADDR, words, { offset: 0 });
    await sender.put(receiver, VADDR, dataView, { offset: 8 });
    await sender.put(receiver, VADDR, arrayBuffer, { offset: 14n });
    await sender.put(receiver, VADDR, slice, { offset: 19 });
    const done = await mailbox.next({ timeout: 2000 });
    const expected = Buffer.alloc(64);
    Buffer.from(words.buffer).copy(expected, 0);
    source.copy(expected, 8, 3, 9);
    Buffer.from(arrayBuffer).copy(expected, 14);
    slice.copy(expected, 19);
    expect(done).toMatchObject({ bytes: 8 + 6 + 5 + 13, ops: 4 });
    expect(asBuffer(done.buffer)).toEqual(expected);
  });

  test('a later put to the same range overwrites the earlier one', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
    mailbox.post(16);
    await sender.put(receiver, VADDR, Buffer.alloc(8, 1), { offset: 4 });
    await sender.put(receiver, VADDR, Buffer.alloc(8, 2), { offset: 4 });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ bytes: 16, ops: 2 });
    expect(asBuffer(done.buffer)).toEqual(Buffer.from([0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0]));
  });

  test('a zero-length put at the very end counts one op and changes nothing', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    const own = Buffer.alloc(8, 0x5a);
    mailbox.post(own);
    await sender.put(receiver, VADDR, Buffer.alloc(0), { offset: 8 });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ epoch: 1, bytes: 0, ops: 1 });
    expect(own).toEqual(Buffer.alloc(8, 0x5a));
  });

  test('many disjoint random ranges land exactly, gaps stay zero', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const size = 4096;
    // 64 disjoint ranges: cut the buffer into 128 slots and fill every other one.
    const next = rng(7);
    const cuts = new Set<number>();
    while (cuts.size < 127) cuts.add(1 + Math.floor(next() * (size - 1)));
    const bounds = [0, ...[...cuts].sort((x, y) => x - y), size];
    const ranges: { offset: number; data: Buffer }[] = [];
    for (let i = 0; i < bounds.length - 1; i += 2) {
      ranges.push({ offset: bounds[i], data: pattern(bounds[i + 1] - bounds[i], 100 + i) });
    }
    const covered = ranges.reduce((sum, r) => sum + r.data.length, 0);
    const mailbox = receiver.openMailbox(VADDR, { threshold: covered });
    mailbox.post(size);
    await Promise.all(shuffle(ranges, 8).map((r) => sender.put(receiver, VADDR, r.data, { offset: r.offset })));
    const done = await mailbox.next({ timeout: 2000 });
    const expected = Buffer.alloc(size);
    for (const r of ranges) r.data.copy(expected, r.offset);
    expect(done).toMatchObject({ bytes: covered, ops: ranges.length });
    expect(asBuffer(done.buffer)).toEqual(expected);
  });
});
