// Append: the receiver picks the offset, so many senders share one buffer without
// coordinating. Records must pack back to back, none lost, none overlapping.
import { type Endpoint } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer, makeRecord, parseRecords } from '../helpers/data';

const endpoints = trackEndpoints();

const SENDERS = 8;
const PER_SENDER = 200;

function allRecords(): { sender: number; seq: number; data: Buffer }[] {
  const out: { sender: number; seq: number; data: Buffer }[] = [];
  // Interleaved so that every sender has puts in flight at the same time.
  for (let seq = 0; seq < PER_SENDER; seq++) {
    for (let sender = 0; sender < SENDERS; sender++) out.push({ sender, seq, data: makeRecord(sender, seq) });
  }
  return out;
}

function expectedKeys(): string[] {
  const keys: string[] = [];
  for (let sender = 0; sender < SENDERS; sender++) for (let seq = 0; seq < PER_SENDER; seq++) keys.push(`${sender}:${seq}`);
  return keys.sort();
}

async function putAll(senders: Endpoint[], receiver: Endpoint, records: ReturnType<typeof allRecords>): Promise<void> {
  await Promise.all(records.map((r) => senders[r.sender].put(receiver, VADDR, r.data, { append: true })));
}

describe.each(PROGRESS_MODES)('append (%s progress)', (progress) => {
  test('sequential appends from one sender pack back to back from offset 0', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { threshold: 12 });
    mailbox.post(32);
    await sender.put(receiver, VADDR, Buffer.from([1, 1, 1]), { append: true });
    await sender.put(receiver, VADDR, Buffer.from([2, 2, 2, 2, 2]), { append: true });
    await sender.put(receiver, VADDR, Buffer.from([3, 3, 3, 3]), { append: true });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ bytes: 12, ops: 3 });
    const expected = Buffer.alloc(32);
    Buffer.from([1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3]).copy(expected);
    expect(asBuffer(done.buffer)).toEqual(expected);
  });

  test('each new buffer starts appending at offset 0', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
    mailbox.post(8);
    mailbox.post(8);
    for (const [value, len] of [
      [1, 3],
      [2, 2],
      [3, 4],
      [4, 1],
    ]) {
      await sender.put(receiver, VADDR, Buffer.alloc(len, value), { append: true });
    }
    const first = await mailbox.next({ timeout: 2000 });
    const second = await mailbox.next({ timeout: 2000 });
    expect(first).toMatchObject({ bufferIndex: 0, bytes: 5, ops: 2 });
    expect(asBuffer(first.buffer)).toEqual(Buffer.from([1, 1, 1, 2, 2, 0, 0, 0]));
    expect(second).toMatchObject({ bufferIndex: 1, bytes: 5, ops: 2 });
    expect(asBuffer(second.buffer)).toEqual(Buffer.from([3, 3, 3, 3, 4, 0, 0, 0]));
  });

  test('puts at explicit offsets do not move the append position', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 3 });
    mailbox.post(16);
    await sender.put(receiver, VADDR, Buffer.alloc(4, 1), { append: true });
    await sender.put(receiver, VADDR, Buffer.alloc(4, 9), { offset: 10 });
    await sender.put(receiver, VADDR, Buffer.alloc(4, 2), { append: true });
    const done = await mailbox.next({ timeout: 2000 });
    expect(asBuffer(done.buffer)).toEqual(Buffer.from([1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 9, 9, 9, 9, 0, 0]));
  });

  test(`${SENDERS} senders x ${PER_SENDER} concurrent appends into a bytes mailbox: every record exactly once`, async () => {
    const receiver = await endpoints.create({ progress });
    const senders = await endpoints.many(progress, SENDERS);
    const records = allRecords();
    const total = records.reduce((sum, r) => sum + r.data.length, 0);
    const mailbox = receiver.openMailbox(VADDR); // threshold: the buffer size, i.e. all records
    const buffer = mailbox.post(total);
    await putAll(senders, receiver, records);
    const done = await mailbox.next({ timeout: 4000 });
    expect(done.buffer).toBe(buffer);
    expect(done).toMatchObject({ epoch: 1, bytes: total, ops: SENDERS * PER_SENDER });
    const parsed = parseRecords(done.buffer, total);
    expect(parsed.errors).toEqual([]);
    expect(parsed.end).toBe(total);
    expect(parsed.keys.length).toBe(SENDERS * PER_SENDER);
    expect([...parsed.keys].sort()).toEqual(expectedKeys());
  });

  test(`${SENDERS} senders x ${PER_SENDER} concurrent appends into an ops mailbox: every record exactly once`, async () => {
    const receiver = await endpoints.create({ progress });
    const senders = await endpoints.many(progress, SENDERS);
    const records = allRecords();
    const total = records.reduce((sum, r) => sum + r.data.length, 0);
    const slack = 1000;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: SENDERS * PER_SENDER });
    mailbox.post(total + slack);
    await putAll(senders, receiver, records);
    const done = await mailbox.next({ timeout: 4000 });
    expect(done).toMatchObject({ epoch: 1, bytes: total, ops: SENDERS * PER_SENDER });
    const parsed = parseRecords(done.buffer, total);
    expect(parsed.errors).toEqual([]);
    expect(parsed.end).toBe(total);
    expect([...parsed.keys].sort()).toEqual(expectedKeys());
    expect(asBuffer(done.buffer).subarray(total)).toEqual(Buffer.alloc(slack));
  });
});
