// Closing: pending waits reject with ERR_RVMA_CLOSED, iterators end quietly, later calls
// are refused, and a closed vaddr (or node id) can be used again.
import { type Completion, Endpoint } from '../../src';
import { PROGRESS_MODES, VADDR, pollUntil, trackEndpoints } from '../helpers/endpoints';
import { expectFails, expectRejects, expectThrows } from '../helpers/errors';

const endpoints = trackEndpoints();

async function collect(iterator: AsyncIterable<Completion>, onEach?: (c: Completion) => void): Promise<Completion[]> {
  const seen: Completion[] = [];
  for await (const completion of iterator) {
    seen.push(completion);
    onEach?.(completion);
  }
  return seen;
}

describe.each(PROGRESS_MODES)('closing (%s progress)', (progress) => {
  test('mailbox.close() rejects every pending next() and refuses later calls', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(8);
    mailbox.post(8);
    await sender.put(receiver, VADDR, Buffer.alloc(1), { offset: 0 });
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1 });
    const first = mailbox.next();
    const second = mailbox.next({ timeout: 10_000 });
    mailbox.close();
    expect(mailbox.closed).toBe(true);
    await expectRejects(first, 'ERR_RVMA_CLOSED', /0x10000/);
    await expectRejects(second, 'ERR_RVMA_CLOSED');
    await expectFails(() => mailbox.next(), 'ERR_RVMA_CLOSED');
    expectThrows(() => mailbox.post(8), 'ERR_RVMA_CLOSED');
    expectThrows(() => mailbox.incEpoch(), 'ERR_RVMA_CLOSED');
    expect(mailbox.epoch).toBe(1); // the count it had when it closed
    mailbox.close(); // closing twice is harmless
    expect(receiver.closed).toBe(false);
  });

  test('endpoint.close() rejects pending waits and puts, then refuses every call', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const a = receiver.openMailbox(VADDR);
    const b = receiver.openMailbox(VADDR + 1n, { epoch: 'ops' });
    a.post(8);
    const waitA = a.next();
    const waitB = b.next({ timeout: 10_000 });
    await receiver.close();
    expect(receiver.closed).toBe(true);
    await expectRejects(waitA, 'ERR_RVMA_CLOSED');
    await expectRejects(waitB, 'ERR_RVMA_CLOSED');
    expect(a.closed).toBe(true);
    expect(b.closed).toBe(true);
    expectThrows(() => receiver.openMailbox(VADDR + 2n), 'ERR_RVMA_CLOSED');
    await expectRejects(receiver.put(sender, VADDR, Buffer.alloc(1)), 'ERR_RVMA_CLOSED');
    await expectFails(() => a.next(), 'ERR_RVMA_CLOSED');
    expectThrows(() => a.post(8), 'ERR_RVMA_CLOSED');
    expectThrows(() => a.incEpoch(), 'ERR_RVMA_CLOSED');
    await receiver.close(); // closing twice is harmless
  });

  test('endpoint.close() rejects the puts it still has in flight', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', maxBuffers: 8 });
    for (let i = 0; i < 8; i++) mailbox.post(8);
    // Nothing yields between the puts and close(), so their outcomes cannot have been delivered.
    const puts = Array.from({ length: 8 }, () => sender.put(receiver, VADDR, Buffer.alloc(8), { offset: 0 }));
    const closing = sender.close();
    for (const put of puts) await expectRejects(put, 'ERR_RVMA_CLOSED');
    await closing;
  });

  test('completions() ends without throwing when the mailbox closes', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    for (let i = 0; i < 3; i++) mailbox.post(4);
    for (let i = 0; i < 3; i++) await sender.put(receiver, VADDR, Buffer.from([i]), { offset: 0 });
    // Three completions are ready; closing from inside the loop drops the third.
    const seen = await collect(mailbox.completions(), (c) => {
      if (c.epoch === 2) mailbox.close();
    });
    expect(seen.map((c) => c.epoch)).toEqual([1, 2]);
  });

  test('completions() waiting for the next epoch ends when the mailbox closes', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(4);
    let consumed = 0;
    const collecting = collect(mailbox.completions(), () => consumed++);
    await sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0 });
    // Once the loop body ran and the event loop turned, the iterator is parked on the next epoch.
    expect(await pollUntil(() => consumed === 1, 10_000)).toBe(true);
    mailbox.close();
    const seen = await collecting;
    expect(seen.map((c) => c.bufferIndex)).toEqual([0]);
  });

  test('completions() ends when the endpoint closes', async () => {
    const receiver = await endpoints.create({ progress });
    const mailbox = receiver.openMailbox(VADDR);
    const collecting = collect(mailbox.completions());
    await receiver.close();
    expect(await collecting).toEqual([]);
  });

  test('a closed vaddr can be reopened, with other options, and starts from epoch 0', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const old = receiver.openMailbox(VADDR);
    old.post(4);
    await sender.put(receiver, VADDR, Buffer.alloc(4, 1), { offset: 0 });
    expect(await old.next({ timeout: 2000 })).toMatchObject({ epoch: 1, bytes: 4 });
    old.close();
    const fresh = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
    expect(fresh.epoch).toBe(0);
    const buffer = fresh.post(8);
    await sender.put(receiver, VADDR, Buffer.alloc(2, 2), { offset: 0 });
    await sender.put(receiver, VADDR, Buffer.alloc(2, 3), { offset: 6 });
    const done = await fresh.next({ timeout: 2000 });
    expect(done).toMatchObject({ vaddr: VADDR, epoch: 1, bufferIndex: 0, bytes: 4, ops: 2 });
    expect(done.buffer).toBe(buffer);
    expect(Buffer.from(done.buffer)).toEqual(Buffer.from([2, 2, 0, 0, 0, 0, 3, 3]));
    expect(old.closed).toBe(true);
    expect(old.epoch).toBe(1);
  });

  test('the node id of a closed endpoint can be used again', async () => {
    const first = await endpoints.create({ progress });
    const nodeId = first.nodeId;
    await expectRejects(Endpoint.create({ nodeId, progress }), 'ERR_RVMA_INVALID_ARGUMENT', /nodeId|node id/);
    await first.close();
    const again = await endpoints.create({ nodeId, progress });
    const sender = await endpoints.create({ progress });
    const mailbox = again.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(4);
    await sender.put(nodeId, VADDR, Buffer.from([9]), { offset: 0 });
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1, bytes: 1 });
  });
});
