// Push: a key that repeats is put straight into the receiver's push mailbox, without a request
// per transfer. Which path each transfer took is read from the counters; every tensor must
// arrive byte for byte and exactly once, whatever the order of send and recv, and a send that
// cannot be pushed (another shape, a full push mailbox) must still reach its recv by a request.
import { type Tensor } from '../../src';
import { PUSH_HELD_MAX } from '../../src/rendezvous/push';
import { expectRejects } from '../helpers/errors';
import { IN_PROCESS_PROVIDERS, bytesOf, floats, trackRendezvous } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };

function sameBytes(received: Tensor, sent: Tensor): void {
  expect(received.shape).toEqual(sent.shape);
  expect(bytesOf(received).equals(bytesOf(sent))).toBe(true);
}

/** Waits until check() holds, polling: the acceptance of a push mailbox travels on its own. */
async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe.each(IN_PROCESS_PROVIDERS)('push (provider %s)', (provider) => {
  test('from the third step of a key on, its tensors are pushed: no request, bytes equal, recv before or after send', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const k = key('w');
    const STEPS = 12;
    for (let step = 1; step <= STEPS; step++) {
      const t = floats([8, 8], step);
      let got;
      if (step % 2 === 0) {
        sender.mgr.find(step).send(k, t);
        got = await receiver.mgr.find(step).recv(k, WAIT);
      } else {
        const pending = receiver.mgr.find(step).recv(k, WAIT);
        sender.mgr.find(step).send(k, t);
        got = await pending;
      }
      sameBytes(got.tensor, t);
      receiver.mgr.cleanup(step);
      sender.mgr.cleanup(step);
      // The second recv offers the push mailbox: wait for its acceptance, so the count is exact.
      if (step === 2) await until('the push acceptance', () => receiver.mgr.pushMailboxes === 1);
    }
    await until('the last push counted', () => sender.mgr.counters.bytesSent === STEPS * 256);
    expect(receiver.mgr.counters).toMatchObject({ requests: 2, metaResponses: 1, pushesReceived: STEPS - 2, errors: 0, bytesReceived: STEPS * 256 });
    expect(sender.mgr.counters).toMatchObject({ pushes: STEPS - 2, notPushed: 0, clonePuts: 1, directPuts: 1 });
  });

  /** Two transfers of the key, so that the push mailbox is offered and accepted. */
  async function pushed(options: Parameters<typeof rendezvous.pair>[1] = {}, accepted = 1) {
    const pair = await rendezvous.pair(provider, options);
    const k = pair.key('p');
    for (const step of [1, 2]) {
      pair.sender.mgr.find(step).send(k, floats([16], step));
      await pair.receiver.mgr.find(step).recv(k, WAIT);
    }
    await until('the push acceptance', () => pair.receiver.mgr.pushMailboxes === accepted);
    return { ...pair, k };
  }

  test('a push that comes before its recv waits in its step; the recv takes it without asking', async () => {
    const { sender, receiver, k } = await pushed();
    const requests = receiver.mgr.counters.requests;
    const t = floats([16], 3);
    sender.mgr.find(3).send(k, t);
    await until('the push', () => receiver.mgr.counters.pushesReceived === 1);
    sameBytes((await receiver.mgr.find(3).recv(k, WAIT)).tensor, t);
    expect(receiver.mgr.counters.requests).toBe(requests);
  });

  test('a recv that timed out waiting for a push: the tensor pushed later goes to the retry', async () => {
    const { sender, receiver, k } = await pushed();
    await expectRejects(receiver.mgr.find(3).recv(k, { timeout: 30 }), 'ERR_RVMA_TIMEOUT');
    const t = floats([16], 33);
    sender.mgr.find(3).send(k, t);
    sameBytes((await receiver.mgr.find(3).recv(k, WAIT)).tensor, t);
  });

  test('another shape on a pushed key is not pushed: the recv waiting for it asks with the new meta, and the next step is pushed again', async () => {
    const { sender, receiver, k } = await pushed();
    const before = { ...receiver.mgr.counters };
    const waiting = receiver.mgr.find(3).recv(k, WAIT);
    const wide = floats([32], 3);
    sender.mgr.find(3).send(k, wide);
    sameBytes((await waiting).tensor, wide);
    expect(sender.mgr.counters.notPushed).toBe(1);
    // NOT_PUSHED carried the new meta: one request, sized for it (no meta response), which
    // offered a push mailbox for the new shape.
    expect(receiver.mgr.counters.requests).toBe(before.requests + 1);
    expect(receiver.mgr.counters.metaResponses).toBe(before.metaResponses);
    await until('the push acceptance', () => receiver.mgr.pushMailboxes === 1);
    for (let step = 4; step <= 7; step++) {
      const t = floats([32], step);
      sender.mgr.find(step).send(k, t);
      sameBytes((await receiver.mgr.find(step).recv(k, WAIT)).tensor, t);
    }
    expect(sender.mgr.counters.pushes).toBe(4);
    expect(receiver.mgr.counters.requests).toBe(before.requests + 1);
  });

  test('a sender ahead by several steps: every tensor arrives once, pushed or kept for a request', async () => {
    const { sender, receiver, k } = await pushed();
    const sent = [3, 4, 5, 6, 7, 8].map((step) => {
      const t = floats([16], step);
      sender.mgr.find(step).send(k, t); // in one turn: the receiver re-posts no buffer meanwhile
      return t;
    });
    await until('every send placed or kept', () => sender.mgr.counters.pushes + sender.mgr.counters.notPushed === 6);
    for (let i = 0; i < sent.length; i++) sameBytes((await receiver.mgr.find(3 + i).recv(k, WAIT)).tensor, sent[i]);
    expect(receiver.mgr.counters.errors).toBe(0);
  });

  test(`a sender pushing steps nobody receives yet: ${PUSH_HELD_MAX} wait at the receiver, the rest are kept for requests, each arrives once`, async () => {
    const { sender, receiver, k } = await pushed();
    const STEPS = 20;
    const sent: Tensor[] = [];
    for (let i = 0; i < STEPS; i++) {
      const t = floats([16], 100 + i);
      sent.push(t);
      sender.mgr.find(3 + i).send(k, t);
      // One at a time: the receiver handles each push (and posts again) before the next.
      await until(`send ${i} placed or kept`, () => sender.mgr.counters.pushes + sender.mgr.counters.notPushed === i + 1);
      await until(`push ${i} handled`, () => receiver.mgr.counters.pushesReceived === sender.mgr.counters.pushes);
    }
    // Before the bound, every push of a step with no recv held a buffer at the receiver for good.
    expect(receiver.mgr.counters.pushesReceived).toBe(PUSH_HELD_MAX);
    expect(sender.mgr.counters.notPushed).toBe(STEPS - PUSH_HELD_MAX);
    for (let i = 0; i < STEPS; i++) sameBytes((await receiver.mgr.find(3 + i).recv(k, WAIT)).tensor, sent[i]);
    expect(receiver.mgr.counters.errors).toBe(0);
    // Taken by their recvs, the waiting contents free the mailbox: the key is pushed again.
    const t = floats([16], 999);
    sender.mgr.find(3 + STEPS).send(k, t);
    sameBytes((await receiver.mgr.find(3 + STEPS).recv(k, WAIT)).tensor, t);
    expect(receiver.mgr.counters.pushesReceived).toBe(PUSH_HELD_MAX + 1);
  });

  test('pushed contents of steps cleaned up unread free their place: the key is pushed again', async () => {
    const { sender, receiver, k } = await pushed();
    for (let i = 0; i < PUSH_HELD_MAX; i++) {
      sender.mgr.find(3 + i).send(k, floats([16], i));
      await until(`push ${i}`, () => receiver.mgr.counters.pushesReceived === i + 1);
    }
    for (let i = 0; i < PUSH_HELD_MAX; i++) receiver.mgr.cleanup(3 + i);
    const t = floats([16], 77);
    sender.mgr.find(50).send(k, t);
    await until('the push after cleanup', () => receiver.mgr.counters.pushesReceived === PUSH_HELD_MAX + 1);
    sameBytes((await receiver.mgr.find(50).recv(k, WAIT)).tensor, t);
    expect(sender.mgr.counters.notPushed).toBe(0);
  });

  test('a push that fails (its mailbox is gone) is kept for a request: the recv waiting for it asks and gets it', async () => {
    const { sender, receiver, k } = await pushed();
    // Fault injection: the receiver's push mailbox closes under its sender.
    (receiver.mgr as unknown as { inboxes: { get(k: string): { mailbox: { close(): void } } } }).inboxes.get(k).mailbox.close();
    const waiting = receiver.mgr.find(3).recv(k, WAIT);
    const t = floats([16], 3);
    sender.mgr.find(3).send(k, t);
    sameBytes((await waiting).tensor, t);
    expect(sender.mgr.counters).toMatchObject({ pushes: 0, notPushed: 1 });
    expect(receiver.mgr.pushMailboxes).toBe(0);
  });

  test('a sender that closes its manager while its node lives on: a recv waiting for a push fails with ERR_RVMA_NO_MAILBOX, not by a timeout, and leaves no push mailbox', async () => {
    const { sender, receiver, k } = await pushed();
    const waiting = receiver.mgr.find(3).recv(k); // no timeout: only the sender's close can end it
    const failed = expectRejects(waiting, 'ERR_RVMA_NO_MAILBOX'); // it may fail before close() returns
    await sender.mgr.close();
    await failed;
    const inboxes = (receiver.mgr as unknown as { inboxes: { get(k: string): unknown } }).inboxes;
    expect(inboxes.get(k)).toBeUndefined(); // neither the accepted one nor one offered with the failed request
    expect(receiver.mgr.pushMailboxes).toBe(0);
  });

  test('cleanup drops a pushed tensor nobody received; later steps still push', async () => {
    const { sender, receiver, k } = await pushed();
    sender.mgr.find(3).send(k, floats([16], 3));
    await until('the push', () => receiver.mgr.counters.pushesReceived === 1);
    receiver.mgr.cleanup(3);
    // Step 3 again is a new step to this manager: the dropped tensor is not in it.
    await expectRejects(receiver.mgr.find(3).recv(k, { timeout: 50 }), 'ERR_RVMA_TIMEOUT');
    const t = floats([16], 4);
    sender.mgr.find(4).send(k, t);
    sameBytes((await receiver.mgr.find(4).recv(k, WAIT)).tensor, t);
    expect(receiver.mgr.counters.pushesReceived).toBe(2);
  });

  test('release() hands a pushed buffer back for the next push', async () => {
    const { sender, receiver, k } = await pushed();
    sender.mgr.find(3).send(k, floats([16], 3));
    const got = await receiver.mgr.find(3).recv(k, WAIT);
    got.release!();
    expect(receiver.mgr.receivePoolBytes).toBe(8 + 64);
  });

  test('pushBufferBytes 0 turns push off: every transfer asks', async () => {
    const { sender, receiver } = await pushed({ receiver: { pushBufferBytes: 0 } }, 0);
    expect(sender.mgr.counters.pushes).toBe(0);
    expect(receiver.mgr.counters.requests).toBe(2);
  });

  test('by default tensors of up to 4 MiB are pushed, larger ones ask', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const MiB = 2 ** 20;
    for (const [name, bytes] of [['at', 4 * MiB], ['over', 4 * MiB + 4]] as const) {
      const k = key(name);
      const shape = [bytes / 4];
      for (const step of [1, 2, 3]) {
        const t = floats(shape, step);
        sender.mgr.find(step).send(k, t);
        sameBytes((await receiver.mgr.find(step).recv(k, WAIT)).tensor, t);
        if (step === 2 && name === 'at') await until('the push acceptance', () => receiver.mgr.pushMailboxes === 1);
      }
    }
    expect(sender.mgr.counters.pushes).toBe(1);
    expect(receiver.mgr.counters).toMatchObject({ pushesReceived: 1, requests: 2 + 3 });
  });

  test('a tensor over pushMaxTensorBytes always takes a request', async () => {
    const { sender, receiver, k } = await pushed({ receiver: { pushMaxTensorBytes: 63 } }, 0);
    sender.mgr.find(3).send(k, floats([16], 3));
    await receiver.mgr.find(3).recv(k, WAIT);
    expect(sender.mgr.counters.pushes).toBe(0);
    expect(receiver.mgr.counters.requests).toBe(3);
  });
});

test('the sender restarting its manager: a recv waiting for a push from the lost node rejects with ERR_RVMA_PEER_LOST', async () => {
  const { sender, receiver, key } = await rendezvous.pair('tcp');
  const k = key('gone');
  for (const step of [1, 2]) {
    sender.mgr.find(step).send(k, floats([4], step));
    await receiver.mgr.find(step).recv(k, WAIT);
  }
  await new Promise((r) => setTimeout(r, 50));
  const waiting = receiver.mgr.find(3).recv(k, WAIT);
  await sender.mgr.close();
  await sender.endpoint.close();
  await expectRejects(waiting, 'ERR_RVMA_PEER_LOST');
});
