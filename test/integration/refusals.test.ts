// Refusals: every put the receiver cannot place rejects with a typed code, counts nothing,
// and leaves the mailbox working for the next valid put.
import { type Endpoint, type Mailbox } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects, expectThrows } from '../helpers/errors';
import { asBuffer } from '../helpers/data';

const endpoints = trackEndpoints();

/** A valid put that fills the head buffer; the completion must count only this put. */
async function expectStillWorks(sender: Endpoint, receiver: Endpoint, mailbox: Mailbox, size: number): Promise<void> {
  const data = Buffer.alloc(size, 0x77);
  await sender.put(receiver, mailbox.vaddr, data, { offset: 0 });
  const done = await mailbox.next({ timeout: 2000 });
  expect(done).toMatchObject({ bytes: size, ops: 1 });
  expect(asBuffer(done.buffer)).toEqual(data);
}

describe.each(PROGRESS_MODES)('refusals (%s progress)', (progress) => {
  test('ERR_RVMA_NO_MAILBOX: nothing open at that vaddr', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    await expectRejects(sender.put(receiver, VADDR + 1n, Buffer.alloc(8)), 'ERR_RVMA_NO_MAILBOX', /0x10001/);
    await expectStillWorks(sender, receiver, mailbox, 8);
    // The vaddr that was refused works once opened.
    const late = receiver.openMailbox(VADDR + 1n);
    late.post(4);
    await expectStillWorks(sender, receiver, late, 4);
  });

  test('ERR_RVMA_NO_BUFFER: mailbox open but nothing posted', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8)), 'ERR_RVMA_NO_BUFFER', /0x10000/);
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8), { append: true }), 'ERR_RVMA_NO_BUFFER');
    mailbox.post(8);
    await expectStillWorks(sender, receiver, mailbox, 8);
  });

  test('ERR_RVMA_NO_BUFFER: buffers posted, all of them full; the message says so and how to go on', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1 });
    mailbox.post(8);
    mailbox.post(8);
    await sender.put(receiver, VADDR, Buffer.alloc(8));
    await sender.put(receiver, VADDR, Buffer.alloc(8));
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8)), 'ERR_RVMA_NO_BUFFER', /has no free buffer: none is posted, or every buffer posted is full or held by puts in flight .*noBufferRetryMs/);
    for (let i = 0; i < 2; i++) mailbox.post((await mailbox.next({ timeout: 5_000 })).buffer);
    await sender.put(receiver, VADDR, Buffer.alloc(8));
  });

  test('ERR_RVMA_OUT_OF_BOUNDS: offset + length past the buffer end', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(16);
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8), { offset: 12 }), 'ERR_RVMA_OUT_OF_BOUNDS');
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(1), { offset: 16 }), 'ERR_RVMA_OUT_OF_BOUNDS');
    // An offset near 2^64 must not wrap around into the buffer.
    await expectRejects(
      sender.put(receiver, VADDR, Buffer.alloc(8), { offset: (1n << 64n) - 4n }),
      'ERR_RVMA_OUT_OF_BOUNDS',
    );
    expect(mailbox.epoch).toBe(0);
    await expectStillWorks(sender, receiver, mailbox, 16);
  });

  test('ERR_RVMA_OUT_OF_BOUNDS: an append that does not fit the free space', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    const buffer = mailbox.post(16);
    await sender.put(receiver, VADDR, Buffer.alloc(10, 1), { append: true });
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(10, 2), { append: true }), 'ERR_RVMA_OUT_OF_BOUNDS');
    // The refused append reserved nothing: the next one still starts at offset 10.
    await sender.put(receiver, VADDR, Buffer.alloc(6, 3), { append: true });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ bytes: 16, ops: 2 });
    expect(done.buffer).toBe(buffer);
    expect(asBuffer(done.buffer)).toEqual(Buffer.concat([Buffer.alloc(10, 1), Buffer.alloc(6, 3)]));
  });

  test('ERR_RVMA_TOO_LARGE: a put larger than the whole buffer', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(16);
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(17)), 'ERR_RVMA_TOO_LARGE', /17 bytes/);
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(17), { append: true }), 'ERR_RVMA_TOO_LARGE');
    await expectStillWorks(sender, receiver, mailbox, 16);
  });

  test('ERR_RVMA_NO_PEER: unknown node id', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    const nowhere = uniqueNodeId('nowhere');
    const error = await expectRejects(sender.put(nowhere, VADDR, Buffer.alloc(8)), 'ERR_RVMA_NO_PEER');
    expect(error.message).toContain(nowhere);
    await expectStillWorks(sender, receiver, mailbox, 8);
  });

  // A closed mailbox is gone from the table: to a sender it is no mailbox at all.
  test('ERR_RVMA_NO_MAILBOX: the mailbox was closed', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    mailbox.close();
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8)), 'ERR_RVMA_NO_MAILBOX');
  });

  test('a closed mailbox refuses puts, and its vaddr works again once reopened', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    mailbox.close();
    await expect(sender.put(receiver, VADDR, Buffer.alloc(8))).rejects.toMatchObject({ name: 'RvmaError' });
    const reopened = receiver.openMailbox(VADDR);
    reopened.post(8);
    await expectStillWorks(sender, receiver, reopened, 8);
  });

  test('ERR_RVMA_CLOSED: the sending endpoint was closed', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    await sender.close();
    await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8)), 'ERR_RVMA_CLOSED');
    const other = await endpoints.create({ progress });
    await expectStillWorks(other, receiver, mailbox, 8);
  });

  test('ERR_RVMA_MAILBOX_EXISTS: opening the same vaddr twice', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR);
    expectThrows(() => receiver.openMailbox(VADDR), 'ERR_RVMA_MAILBOX_EXISTS', /0x10000/);
    expectThrows(() => receiver.openMailbox(VADDR, { epoch: 'ops' }), 'ERR_RVMA_MAILBOX_EXISTS');
    mailbox.post(8);
    await expectStillWorks(sender, receiver, mailbox, 8);
  });

  test('ERR_RVMA_TOO_MANY_BUFFERS: posting beyond maxBuffers', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { maxBuffers: 2 });
    mailbox.post(8);
    mailbox.post(8);
    expectThrows(() => mailbox.post(8), 'ERR_RVMA_TOO_MANY_BUFFERS', /0x10000/);
    expect(mailbox.postedCount).toBe(2);
    await expectStillWorks(sender, receiver, mailbox, 8);
    // A retired buffer frees its place in the FIFO.
    mailbox.post(8);
    expectThrows(() => mailbox.post(8), 'ERR_RVMA_TOO_MANY_BUFFERS');
    await expectStillWorks(sender, receiver, mailbox, 8);
    await expectStillWorks(sender, receiver, mailbox, 8);
    expect(mailbox.epoch).toBe(3);
  });
});
