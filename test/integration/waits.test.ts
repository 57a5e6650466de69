// Every wait is bounded: timeouts and abort signals reject with typed codes, and a wait
// that gave up never swallows a completion meant for the next caller.
import { getEventListeners } from 'node:events';
import { PROGRESS_MODES, VADDR, pollUntil, trackEndpoints } from '../helpers/endpoints';
import { expectRejects, settledSoon } from '../helpers/errors';
import { asBuffer } from '../helpers/data';

const endpoints = trackEndpoints();

describe.each(PROGRESS_MODES)('waits (%s progress)', (progress) => {
  test('next({ timeout }) rejects with ERR_RVMA_TIMEOUT', async () => {
    const receiver = await endpoints.create({ progress });
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(8);
    await expectRejects(mailbox.next({ timeout: 20 }), 'ERR_RVMA_TIMEOUT', /timed out after 20 ms/);
  });

  test('next({ signal }) rejects with ERR_RVMA_ABORTED when aborted later, with the reason as cause', async () => {
    const receiver = await endpoints.create({ progress });
    const mailbox = receiver.openMailbox(VADDR);
    const controller = new AbortController();
    const waiting = mailbox.next({ signal: controller.signal });
    expect(await settledSoon(waiting)).toBe(false);
    const reason = new Error('stop');
    controller.abort(reason);
    const error = await expectRejects(waiting, 'ERR_RVMA_ABORTED', /aborted/);
    expect(error.cause).toBe(reason);
  });

  test('one signal shared by 200 puts: one listener on it, no warning, the waiting ones aborted, nothing left after', async () => {
    const receiver = await endpoints.create({ progress });
    const sender = await endpoints.create({ progress });
    const warnings: Error[] = [];
    const onWarning = (w: Error): number => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const shared = new AbortController();
      // Puts answered at once, and puts that wait: 100 to a mailbox without buffers retrying.
      const settledPuts = Array.from({ length: 100 }, () => sender.put(receiver, VADDR + 1n, Buffer.alloc(1), { signal: shared.signal }).catch(() => 'refused'));
      receiver.openMailbox(VADDR + 2n);
      const waiting = Array.from({ length: 100 }, () =>
        sender.put(receiver, VADDR + 2n, Buffer.alloc(1), { signal: shared.signal, noBufferRetryMs: 60_000 }),
      );
      expect(await Promise.all(settledPuts)).toEqual(Array(100).fill('refused')); // no such mailbox
      expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
      shared.abort();
      for (const put of waiting) await expectRejects(put, 'ERR_RVMA_ABORTED');
      expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  test('an already-aborted signal rejects next() at once', async () => {
    const receiver = await endpoints.create({ progress });
    const mailbox = receiver.openMailbox(VADDR);
    const waiting = mailbox.next({ signal: AbortSignal.abort(), timeout: 10_000 });
    expect(await settledSoon(waiting)).toBe(true);
    await expectRejects(waiting, 'ERR_RVMA_ABORTED');
  });

  test('put() with an already-aborted signal rejects ERR_RVMA_ABORTED and places nothing', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    const buffer = mailbox.post(8);
    const put = sender.put(receiver, VADDR, Buffer.alloc(8, 0xff), { offset: 0, signal: AbortSignal.abort() });
    expect(await settledSoon(put)).toBe(true);
    await expectRejects(put, 'ERR_RVMA_ABORTED');
    expect(mailbox.epoch).toBe(0);
    expect(asBuffer(buffer)).toEqual(Buffer.alloc(8));
    // The next put is the first one counted.
    await sender.put(receiver, VADDR, Buffer.from([1, 2]), { offset: 0 });
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1, bytes: 2, ops: 1 });
  });

  test('after a timed-out next(), the next completion still reaches the next caller', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    const buffer = mailbox.post(4);
    await expectRejects(mailbox.next({ timeout: 10 }), 'ERR_RVMA_TIMEOUT');
    await sender.put(receiver, VADDR, Buffer.from([7]), { offset: 0 });
    const done = await mailbox.next({ timeout: 2000 });
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: 1, ops: 1 });
    expect(done.buffer).toBe(buffer);
  });

  test('after an aborted next(), the next completion still reaches the next caller', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(4);
    const controller = new AbortController();
    const gaveUp = mailbox.next({ signal: controller.signal });
    controller.abort();
    await expectRejects(gaveUp, 'ERR_RVMA_ABORTED');
    await sender.put(receiver, VADDR, Buffer.from([7]), { offset: 0 });
    expect(await mailbox.next({ timeout: 2000 })).toMatchObject({ epoch: 1, bytes: 1 });
  });

  test('completions that arrive before anyone waits are kept, in order', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    for (let i = 0; i < 3; i++) mailbox.post(4);
    for (let i = 0; i < 3; i++) await sender.put(receiver, VADDR, Buffer.from([i]), { offset: 0 });
    const epochs: number[] = [];
    for (let i = 0; i < 3; i++) epochs.push((await mailbox.next({ timeout: 2000 })).epoch);
    expect(epochs).toEqual([1, 2, 3]);
  });

  test('concurrent waiters are served in the order they started waiting', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    for (let i = 0; i < 3; i++) mailbox.post(4);
    const waits = [mailbox.next(), mailbox.next({ timeout: 10_000 }), mailbox.next({ signal: new AbortController().signal })];
    for (let i = 0; i < 3; i++) await sender.put(receiver, VADDR, Buffer.from([i]), { offset: 0 });
    const done = await Promise.all(waits);
    expect(done.map((c) => c.epoch)).toEqual([1, 2, 3]);
    expect(done.map((c) => c.bufferIndex)).toEqual([0, 1, 2]);
  });

  test('a completion that arrives in time resolves waits with a timeout or timeout: Infinity', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(4);
    mailbox.post(4);
    const bounded = mailbox.next({ timeout: 10_000 });
    const unbounded = mailbox.next({ timeout: Infinity });
    await sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0 });
    await sender.put(receiver, VADDR, Buffer.from([2]), { offset: 0 });
    expect(await bounded).toMatchObject({ epoch: 1 });
    expect(await unbounded).toMatchObject({ epoch: 2 });
  });

  test('next({ timeout: 0 }) returns a completion already there, and rejects at once when none is', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(4);
    await sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0 });
    await pollUntil(() => mailbox.epoch === 1);
    expect(await mailbox.next({ timeout: 0 })).toMatchObject({ epoch: 1 });
    await expectRejects(mailbox.next({ timeout: 0 }), 'ERR_RVMA_TIMEOUT');
  });

  test('a signal shared by many waits and puts keeps no listener once they settle', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const count = 50;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', maxBuffers: count });
    for (let i = 0; i < count; i++) mailbox.post(4);
    const { signal } = new AbortController();
    const waits = Array.from({ length: count }, () => mailbox.next({ signal }));
    const puts = Array.from({ length: count }, () => sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0, signal }));
    expect(getEventListeners(signal, 'abort').length).toBe(1); // one for all of them
    await Promise.all(puts);
    const done = await Promise.all(waits);
    expect(done.map((c) => c.epoch)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    expect(getEventListeners(signal, 'abort').length).toBe(0);
  });

  // setTimeout turns any delay above 2^31-1 ms into 1 ms: such a timeout must be refused
  // (ERR_RVMA_INVALID_ARGUMENT) or honoured, never fire at once.
  test('a timeout beyond 2^31-1 ms does not fire early', async () => {
    const { receiver, sender } = await endpoints.pair(progress);
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
    mailbox.post(4);
    let outcome: Promise<string>;
    try {
      outcome = mailbox.next({ timeout: 2 ** 31 }).then(
        () => 'resolved',
        (error: { code?: string }) => String(error.code),
      );
    } catch (error) {
      expect((error as { code?: string }).code).toBe('ERR_RVMA_INVALID_ARGUMENT');
      return;
    }
    // Timers fire in deadline order: a 1 ms timer armed first fires before this 20 ms one.
    const other = receiver.openMailbox(VADDR + 1n);
    await expectRejects(other.next({ timeout: 20 }), 'ERR_RVMA_TIMEOUT');
    await sender.put(receiver, VADDR, Buffer.from([1]), { offset: 0 });
    expect(['resolved', 'ERR_RVMA_INVALID_ARGUMENT']).toContain(await outcome);
  });

  test('completions({ signal }) throws ERR_RVMA_ABORTED when aborted', async () => {
    const receiver = await endpoints.create({ progress });
    const mailbox = receiver.openMailbox(VADDR);
    const controller = new AbortController();
    const iterating = (async () => {
      for await (const completion of mailbox.completions({ signal: controller.signal })) void completion;
    })();
    expect(await settledSoon(iterating)).toBe(false);
    controller.abort();
    await expectRejects(iterating, 'ERR_RVMA_ABORTED');
  });
});
