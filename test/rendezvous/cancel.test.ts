// A remote recv that gives up (timeout, abort) withdraws its request at the sender, as a
// cancelled recv leaves TensorFlow's queue: the tensor then goes to the next recv of the key,
// whether the sender had parked the request, or had already matched it and was delivering.
// Also: one remote recv of a key per step at a time, and a bounded meta cache.
import { type RendezvousMgr } from '../../src';
import { waitFor } from '../helpers/children';
import { expectRejects } from '../helpers/errors';
import { IN_PROCESS_PROVIDERS, bytesOf, floats, nextServed, trackRendezvous } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };

const withdrawn = (mgr: RendezvousMgr) => async () => mgr.counters.withdrawn > 0;

describe.each(IN_PROCESS_PROVIDERS)('a remote recv that gives up (provider %s)', (provider) => {
  test('timed out before the send: the retry receives the tensor sent after it', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const k = key('late');
    const served = nextServed(sender.mgr.find(1));
    await expectRejects(receiver.mgr.find(1).recv(k, { timeout: 100 }), 'ERR_RVMA_TIMEOUT');
    await served; // the request did reach the sender
    await waitFor('the sender to withdraw the request', withdrawn(sender.mgr), 10_000);
    const t = floats([64], 3);
    sender.mgr.find(1).send(k, t);
    const { tensor } = await receiver.mgr.find(1).recv(k, WAIT);
    expect(bytesOf(tensor).equals(bytesOf(t))).toBe(true);
    expect(sender.mgr.counters.withdrawn).toBe(1);
  });

  test('aborted before the send: the same', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const k = key('aborted');
    const served = nextServed(sender.mgr.find(2));
    const abort = new AbortController();
    const first = receiver.mgr.find(2).recv(k, { signal: abort.signal });
    await served;
    abort.abort();
    await expectRejects(first, 'ERR_RVMA_ABORTED');
    await waitFor('the sender to withdraw the request', withdrawn(sender.mgr), 10_000);
    const t = floats([3, 5], 4);
    sender.mgr.find(2).send(k, t);
    const { tensor } = await receiver.mgr.find(2).recv(k, WAIT);
    expect(bytesOf(tensor).equals(bytesOf(t))).toBe(true);
  });

  test('many give-ups in a row, then a send: only the last recv gets it, once', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const k = key('retried');
    for (let i = 0; i < 5; i++) await expectRejects(receiver.mgr.find(3).recv(k, { timeout: 30 }), 'ERR_RVMA_TIMEOUT');
    const t = floats([8], 5);
    const last = receiver.mgr.find(3).recv(k, WAIT);
    sender.mgr.find(3).send(k, t);
    const { tensor } = await last;
    expect(bytesOf(tensor).equals(bytesOf(t))).toBe(true);
  });

  // The sender's content put meets a closed mailbox: the receiver gave up while it was on the way.
  test.each([
    ['meta response and re-request (first transfer of the key)', 1],
    ['direct put (cached meta)', 2],
  ])('given up while the content is being delivered (%s): the retry receives it', async (_path, transfers) => {
    let abort: AbortController | undefined;
    const { sender, receiver, key } = await rendezvous.pair(provider, {
      sender: { beforeContentPut: () => abort?.abort() },
    });
    const k = key('racing');
    // Earlier transfers of the key fill the receiver's meta cache: the last one then goes direct.
    for (let step = 1; step < transfers; step++) {
      sender.mgr.find(step).send(k, floats([16], step));
      await receiver.mgr.find(step).recv(k, WAIT);
    }
    const step = transfers;
    const t = floats([16], 99);
    sender.mgr.find(step).send(k, t);
    abort = new AbortController();
    await expectRejects(receiver.mgr.find(step).recv(k, { signal: abort.signal }), 'ERR_RVMA_ABORTED');
    abort = undefined;
    await waitFor('the sender to take the tensor back', withdrawn(sender.mgr), 10_000);
    const { tensor } = await receiver.mgr.find(step).recv(k, WAIT);
    expect(bytesOf(tensor).equals(bytesOf(t))).toBe(true);
  });

  test('a second concurrent recv of one key in one step is refused; another step is not', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const k = key('twice');
    const first = receiver.mgr.find(4).recv(k, WAIT);
    await expectRejects(receiver.mgr.find(4).recv(k, WAIT), 'ERR_RVMA_INVALID_ARGUMENT', /already being received in step 4/);
    const other = receiver.mgr.find(5).recv(k, WAIT);
    sender.mgr.find(4).send(k, floats([2], 1));
    sender.mgr.find(5).send(k, floats([2], 2));
    await Promise.all([first, other]);
  });
});

test('the meta cache keeps at most metaCacheSize entries, the least recently used going first', async () => {
  const { sender, receiver, key } = await rendezvous.pair('auto', { receiver: { metaCacheSize: 8 } });
  for (let i = 0; i < 50; i++) {
    const k = key(`name${i}`);
    sender.mgr.find(i).send(k, floats([4], i));
    await receiver.mgr.find(i).recv(k, WAIT);
    receiver.mgr.cleanup(i);
    sender.mgr.cleanup(i);
  }
  expect(receiver.mgr.metaCacheEntries).toBe(8);
  expect(receiver.mgr.counters.metaResponses).toBe(50); // every name was new
  // A name used again soon keeps its entry: a recent one goes direct, an old one asks for meta.
  const recent = key('name49');
  sender.mgr.find(100).send(recent, floats([4], 1));
  await receiver.mgr.find(100).recv(recent, WAIT);
  expect(receiver.mgr.counters.metaResponses).toBe(50);
  const old = key('name0');
  sender.mgr.find(101).send(old, floats([4], 2));
  await receiver.mgr.find(101).recv(old, WAIT);
  expect(receiver.mgr.counters.metaResponses).toBe(51);
});
