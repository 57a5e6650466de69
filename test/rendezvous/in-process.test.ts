// The rendezvous protocol between two endpoints of one process (different tasks, one
// RendezvousMgr each), over the loopback provider ('auto') and over real sockets ('tcp'):
// tag matching in both orders, which protocol path each transfer takes (counters), many
// keys and steps at once, aborts, sender-side errors, validation, dead and empty tensors,
// timeouts, signals and stale incarnations.
import { MemoryDirectoryHub, RvmaError, type Tensor, createKey } from '../../src';
import { expectRejects, settledSoon } from '../helpers/errors';
import {
  IN_PROCESS_PROVIDERS,
  bytesOf,
  device,
  floats,
  nextServed,
  task,
  trackRendezvous,
  uniqueJob,
} from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };

function sameBytes(received: Tensor, sent: Tensor): void {
  expect(received.dtype).toBe(sent.dtype);
  expect(received.shape).toEqual(sent.shape);
  expect(bytesOf(received).equals(bytesOf(sent))).toBe(true);
}

describe.each(IN_PROCESS_PROVIDERS)('rendezvous between two endpoints (provider %s)', (provider) => {
  describe('tag matching', () => {
    test('recv before send: the request parks at the sender until the tensor is sent', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('a');
      const served = nextServed(sender.mgr.find(1));
      const received = receiver.mgr.find(1).recv(k, WAIT);
      expect(await served).toBe(k);
      expect(await settledSoon(received)).toBe(false);
      const t = floats([4, 4], 1);
      sender.mgr.find(1).send(k, t);
      const { tensor, isDead } = await received;
      expect(isDead).toBe(false);
      sameBytes(tensor, t);
    });

    test('send before recv: the tensor parks at the sender until the request comes', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('a');
      const t = floats([3, 5], 2);
      sender.mgr.find(1).send(k, t);
      const { tensor } = await receiver.mgr.find(1).recv(k, WAIT);
      sameBytes(tensor, t);
    });

    test('same-task send and recv (one endpoint hosting both tasks) never touch the network', async () => {
      const hub = new MemoryDirectoryHub();
      const job = uniqueJob();
      const node = await rendezvous.node(hub, task(job, 0), provider, { tasks: [task(job, 0), task(job, 1)] });
      const k = createKey(device(task(job, 0)), node.endpoint.incarnation, device(task(job, 1)), 'local');
      const rv = node.mgr.find(7);
      // recv first
      const first = rv.recv(k, WAIT);
      expect(await settledSoon(first)).toBe(false);
      const a = floats([2, 2], 3);
      rv.send(k, a);
      sameBytes((await first).tensor, a);
      // send first, and a dead tensor keeps its flag
      const b = floats([1], 4);
      rv.send(k, b, { isDead: true });
      const second = await rv.recv(k, WAIT);
      expect(second.isDead).toBe(true);
      sameBytes(second.tensor, b);
      expect(node.mgr.counters).toEqual({
        requests: 0, metaResponses: 0, reRequests: 0, directPuts: 0, clonePuts: 0, errors: 0, withdrawn: 0, forged: 0,
        pushes: 0, pushesReceived: 0, notPushed: 0, refused: 0, unsent: 0, bytesSent: 0, bytesReceived: 0,
      });
    });
  });

  describe('protocol paths, as the counters show them', () => {
    test('first transfer: request + meta response + re-request + clone put; same shape again: direct put; new shape: meta again', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('weights');
      const transfer = async (step: number, t: Tensor) => {
        const got = receiver.mgr.find(step).recv(k, WAIT);
        sender.mgr.find(step).send(k, t);
        sameBytes((await got).tensor, t);
      };

      await transfer(1, floats([8, 16], 1));
      expect(receiver.mgr.counters).toMatchObject({ requests: 1, metaResponses: 1, reRequests: 1, errors: 0, bytesReceived: 512 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 1, directPuts: 0, requests: 0 });

      // Next step, same shape: the receiver's cached meta is right, the sender puts at once.
      await transfer(2, floats([8, 16], 2));
      expect(receiver.mgr.counters).toMatchObject({ requests: 2, metaResponses: 1, reRequests: 1, bytesReceived: 1024 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 1, directPuts: 1 });

      // Shape change: the cached meta is stale, the receiver reallocates.
      await transfer(3, floats([16, 16], 3));
      expect(receiver.mgr.counters).toMatchObject({ requests: 3, metaResponses: 2, reRequests: 2, bytesReceived: 2048 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 2, directPuts: 1 });

      // Same byte size, other shape: still a different meta.
      await transfer(4, floats([32, 8], 4));
      expect(receiver.mgr.counters).toMatchObject({ requests: 4, metaResponses: 3, reRequests: 3, bytesReceived: 3072 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 3, directPuts: 1 });

      // And the new shape is then cached in turn.
      await transfer(5, floats([32, 8], 5));
      expect(receiver.mgr.counters).toMatchObject({ requests: 5, metaResponses: 3, reRequests: 3, errors: 0 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 3, directPuts: 2 });
    });

    test('a direct put for a recv that came first (request parked with a cached meta)', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('w');
      const warm = receiver.mgr.find(1).recv(k, WAIT);
      sender.mgr.find(1).send(k, floats([64], 1));
      await warm;
      const served = nextServed(sender.mgr.find(2));
      const got = receiver.mgr.find(2).recv(k, WAIT);
      await served;
      const t = floats([64], 2);
      sender.mgr.find(2).send(k, t);
      sameBytes((await got).tensor, t);
      expect(sender.mgr.counters.directPuts).toBe(1);
      expect(receiver.mgr.counters.metaResponses).toBe(1);
    });

    test('the sender may reuse its tensor once sent: the re-request path put a copy', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('reused');
      const t = floats([256], 9);
      const expected = Buffer.from(bytesOf(t));
      const served = nextServed(sender.mgr.find(1));
      const got = receiver.mgr.find(1).recv(k, WAIT);
      await served;
      sender.mgr.find(1).send(k, t);
      (t.data as Float32Array).fill(-1); // overwritten before the re-request arrives
      expect(bytesOf((await got).tensor).equals(expected)).toBe(true);
    });
  });

  describe('many keys and steps', () => {
    test('100 concurrent keys in one step all arrive with their own contents, then all go direct next step', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const N = 100;
      const tensors = (step: number) => Array.from({ length: N }, (_, i) => floats([i + 1, 3], step * 1000 + i));
      for (const step of [1, 2]) {
        const sent = tensors(step);
        const recvs = sent.map((_, i) => receiver.mgr.find(step).recv(key(`k${i}`), WAIT));
        for (let i = N - 1; i >= 0; i--) sender.mgr.find(step).send(key(`k${i}`), sent[i]);
        const got = await Promise.all(recvs);
        got.forEach((r, i) => sameBytes(r.tensor, sent[i]));
      }
      expect(receiver.mgr.counters).toMatchObject({ requests: 2 * N, metaResponses: N, reRequests: N, errors: 0 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: N, directPuts: N });
    });

    test('two steps with the same key names never mix, whatever the order', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const names = Array.from({ length: 8 }, (_, i) => `t${i}`);
      // Same shapes in both steps (so cached metas are in play), different contents.
      const content = (step: number, i: number) => floats([i + 2], step * 100 + i);
      const recvs = new Map<string, Promise<{ tensor: Tensor }>>();
      // Receives interleaved across the steps, registered before any send.
      for (const n of names) {
        recvs.set(`11/${n}`, receiver.mgr.find(11).recv(key(n), WAIT));
        recvs.set(`10/${n}`, receiver.mgr.find(10).recv(key(n), WAIT));
      }
      // Sends in yet another order: half of step 11, all of step 10 backwards, the rest of 11.
      names.forEach((n, i) => i % 2 === 1 && sender.mgr.find(11).send(key(n), content(11, i)));
      for (let i = names.length - 1; i >= 0; i--) sender.mgr.find(10).send(key(names[i]), content(10, i));
      names.forEach((n, i) => i % 2 === 0 && sender.mgr.find(11).send(key(n), content(11, i)));
      for (const [i, n] of names.entries()) {
        sameBytes((await recvs.get(`10/${n}`)!).tensor, content(10, i));
        sameBytes((await recvs.get(`11/${n}`)!).tensor, content(11, i));
      }
    });
  });

  describe('aborts and errors', () => {
    /** A receiver hosting its task and a second one, so it has a local and a remote source. */
    async function threeTasks() {
      const hub = new MemoryDirectoryHub();
      const job = uniqueJob();
      const sender = await rendezvous.node(hub, task(job, 0), provider);
      const receiver = await rendezvous.node(hub, task(job, 1), provider, { tasks: [task(job, 1), task(job, 2)] });
      return {
        sender,
        receiver,
        remoteKey: (n: string) => createKey(device(task(job, 0)), sender.endpoint.incarnation, device(task(job, 1)), n),
        localKey: (n: string) => createKey(device(task(job, 2)), receiver.endpoint.incarnation, device(task(job, 1)), n),
      };
    }

    test('cleanup(step) rejects pending local and remote recvs with ERR_RVMA_ABORTED; the next step works', async () => {
      const { sender, receiver, remoteKey, localKey } = await threeTasks();
      const served = nextServed(sender.mgr.find(1));
      const remote = receiver.mgr.find(1).recv(remoteKey('r'), WAIT);
      const local = receiver.mgr.find(1).recv(localKey('l'), WAIT);
      await served; // the remote recv is parked at the sender
      receiver.mgr.cleanup(1);
      await expectRejects(remote, 'ERR_RVMA_ABORTED', /step 1 was cleaned up/);
      await expectRejects(local, 'ERR_RVMA_ABORTED', /step 1 was cleaned up/);
      // The sender's late tensor answers a request nobody waits for; nothing breaks.
      sender.mgr.find(1).send(remoteKey('r'), floats([2], 1));
      const t = floats([2], 2);
      const next = receiver.mgr.find(2).recv(remoteKey('r'), WAIT);
      sender.mgr.find(2).send(remoteKey('r'), t);
      sameBytes((await next).tensor, t);
    });

    test('startAbort(err) rejects pending recvs with err, and later sends and recvs of the step too', async () => {
      const { sender, receiver, remoteKey, localKey } = await threeTasks();
      const served = nextServed(sender.mgr.find(1));
      const rv = receiver.mgr.find(1);
      const remote = rv.recv(remoteKey('r'), WAIT);
      const local = rv.recv(localKey('l'), WAIT);
      await served;
      const error = new RvmaError('ERR_RVMA_ABORTED', 'the step failed elsewhere');
      rv.startAbort(error);
      await expect(remote).rejects.toBe(error);
      await expect(local).rejects.toBe(error);
      expect(rv.abortError).toBe(error);
      await expect(rv.recv(localKey('later'), WAIT)).rejects.toBe(error);
      await expect(rv.recv(remoteKey('later'), WAIT)).rejects.toBe(error);
      expect(() => rv.send(localKey('later'), floats([1], 1))).toThrow(error);
    });

    test('the sender cleans up the step while the request is parked: ERROR_STATUS rejects the recv with ERR_RVMA_ABORTED', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const served = nextServed(sender.mgr.find(1));
      const received = receiver.mgr.find(1).recv(key('x'), WAIT);
      await served;
      sender.mgr.cleanup(1);
      await expectRejects(received, 'ERR_RVMA_ABORTED', new RegExp(`sender ${sender.endpoint.nodeId} failed: .*step 1 was cleaned up`));
      expect(receiver.mgr.counters.errors).toBe(1);
      expect(receiver.mgr.counters.metaResponses).toBe(0);
    });

    test('a request for a step the sender already cleaned up is refused with ERR_RVMA_ABORTED, not parked', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const t = floats([2], 1);
      const first = receiver.mgr.find(1).recv(key('x'), WAIT);
      sender.mgr.find(1).send(key('x'), t);
      await first;
      sender.mgr.cleanup(1); // done with step 1 here; a late request for it must not wait forever
      await expectRejects(receiver.mgr.find(1).recv(key('y'), WAIT), 'ERR_RVMA_ABORTED', /step 1 was cleaned up/);
      expect(receiver.mgr.counters.errors).toBe(1);
    });

    test("a sender-side abort's code travels in ERROR_STATUS", async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const rv = sender.mgr.find(1);
      const served = nextServed(rv);
      const received = receiver.mgr.find(1).recv(key('x'), WAIT);
      await served;
      rv.startAbort(new RvmaError('ERR_RVMA_OVERFLOW', 'queue overflowed'));
      await expectRejects(received, 'ERR_RVMA_OVERFLOW', /queue overflowed/);
      expect(receiver.mgr.counters.errors).toBe(1);
    });
  });

  describe('validation', () => {
    test('validate with a byte flipped before the content put: recv rejects ERR_RVMA_CHECKSUM', async () => {
      const seen: string[] = [];
      const { sender, receiver, key } = await rendezvous.pair(provider, {
        sender: {
          validate: true,
          beforeContentPut: (k, bytes) => {
            seen.push(k);
            bytes[bytes.length >> 1] ^= 0x01;
          },
        },
        receiver: { validate: true },
      });
      const k = key('v');
      const t = floats([32], 1);
      const original = Buffer.from(bytesOf(t));
      const got = receiver.mgr.find(1).recv(k, WAIT);
      sender.mgr.find(1).send(k, t);
      await expectRejects(got, 'ERR_RVMA_CHECKSUM', /checksum/);
      expect(seen).toEqual([k]);
      // The hook flipped the sender's copy, not the caller's tensor.
      expect(bytesOf(t).equals(original)).toBe(true);
    });

    test('validate without corruption: every transfer checks out, and each one asks for the meta (no cached direct put)', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider, { sender: { validate: true }, receiver: { validate: true } });
      const k = key('v');
      for (const step of [1, 2]) {
        const t = floats([32], step);
        const got = receiver.mgr.find(step).recv(k, WAIT);
        sender.mgr.find(step).send(k, t);
        sameBytes((await got).tensor, t);
      }
      expect(receiver.mgr.counters).toMatchObject({ requests: 2, metaResponses: 2, reRequests: 2, errors: 0 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 2, directPuts: 0 });
    });
  });

  describe('meta-only tensors', () => {
    test('a dead tensor carries its meta only: no content put, no bytes', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('dead');
      const got = receiver.mgr.find(1).recv(k, WAIT);
      sender.mgr.find(1).send(k, floats([3, 4], 1), { isDead: true });
      const { tensor, isDead } = await got;
      expect(isDead).toBe(true);
      expect(tensor.dtype).toBe('float32');
      expect(tensor.shape).toEqual([3, 4]);
      expect((tensor.data as Float32Array).length).toBe(0);
      expect(receiver.mgr.counters).toMatchObject({ requests: 1, metaResponses: 1, reRequests: 0, bytesReceived: 0 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 0, directPuts: 0, bytesSent: 0 });

      // A dead string tensor too; then a live tensor under the same key flows normally.
      const deadStrings = receiver.mgr.find(2).recv(k, WAIT);
      sender.mgr.find(2).send(k, { dtype: 'string', shape: [2], data: ['a', 'b'] }, { isDead: true });
      expect(await deadStrings).toEqual({ tensor: { dtype: 'string', shape: [2], data: [] }, isDead: true });
      const live = floats([3, 4], 3);
      const got3 = receiver.mgr.find(3).recv(k, WAIT);
      sender.mgr.find(3).send(k, live);
      sameBytes((await got3).tensor, live);
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 1, directPuts: 0 });
    });

    test('a zero-size tensor (shape [0, 5]) carries its meta only, also when its meta is cached', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const k = key('empty');
      for (const step of [1, 2]) {
        const got = receiver.mgr.find(step).recv(k, WAIT);
        sender.mgr.find(step).send(k, { dtype: 'float32', shape: [0, 5], data: new Float32Array(0) });
        const { tensor, isDead } = await got;
        expect(isDead).toBe(false);
        expect(tensor.shape).toEqual([0, 5]);
        expect((tensor.data as Float32Array).length).toBe(0);
      }
      expect(receiver.mgr.counters).toMatchObject({ requests: 2, metaResponses: 2, reRequests: 0, bytesReceived: 0 });
      expect(sender.mgr.counters).toMatchObject({ clonePuts: 0, directPuts: 0, bytesSent: 0 });
      // An empty string tensor too.
      const got = receiver.mgr.find(3).recv(k, WAIT);
      sender.mgr.find(3).send(k, { dtype: 'string', shape: [0], data: [] });
      expect(await got).toEqual({ tensor: { dtype: 'string', shape: [0], data: [] }, isDead: false });
    });
  });

  describe('waits', () => {
    test('a remote recv times out with ERR_RVMA_TIMEOUT; the same step still serves other keys', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      await expectRejects(receiver.mgr.find(1).recv(key('never'), { timeout: 50 }), 'ERR_RVMA_TIMEOUT', /timed out after 50 ms/);
      const t = floats([2], 1);
      const got = receiver.mgr.find(1).recv(key('other'), WAIT);
      sender.mgr.find(1).send(key('other'), t);
      sameBytes((await got).tensor, t);
    });

    test('a local recv times out with ERR_RVMA_TIMEOUT and gives its key back', async () => {
      const hub = new MemoryDirectoryHub();
      const job = uniqueJob();
      const node = await rendezvous.node(hub, task(job, 0), provider, { tasks: [task(job, 0), task(job, 1)] });
      const k = createKey(device(task(job, 0)), node.endpoint.incarnation, device(task(job, 1)), 'l');
      const rv = node.mgr.find(1);
      await expectRejects(rv.recv(k, { timeout: 20 }), 'ERR_RVMA_TIMEOUT');
      const t = floats([1], 1);
      rv.send(k, t);
      sameBytes((await rv.recv(k, WAIT)).tensor, t);
    });

    test('an AbortSignal rejects a parked remote recv with ERR_RVMA_ABORTED', async () => {
      const { sender, receiver, key } = await rendezvous.pair(provider);
      const controller = new AbortController();
      const served = nextServed(sender.mgr.find(1));
      const got = receiver.mgr.find(1).recv(key('s'), { signal: controller.signal });
      await served;
      controller.abort(new Error('user cancelled'));
      const error = await expectRejects(got, 'ERR_RVMA_ABORTED', /aborted/);
      expect((error.cause as Error).message).toBe('user cancelled');
    });

    test('an already aborted signal rejects at once and sends no request', async () => {
      const { receiver, key } = await rendezvous.pair(provider);
      await expectRejects(receiver.mgr.find(1).recv(key('s'), { signal: AbortSignal.abort() }), 'ERR_RVMA_ABORTED');
      expect(receiver.mgr.counters.requests).toBe(0);
    });
  });

  describe('incarnations', () => {
    test("a key naming an incarnation that is not the sender's current one rejects with ERR_RVMA_PEER_LOST", async () => {
      const { sender, receiver } = await rendezvous.pair(provider);
      const stale = createKey(device(sender.task), 'deadbeef', device(receiver.task), 'x');
      await expectRejects(receiver.mgr.find(1).recv(stale, WAIT), 'ERR_RVMA_PEER_LOST', /incarnation 00000000deadbeef/);
    });

    test('a key made for a sender that has since restarted rejects with ERR_RVMA_PEER_LOST; the new one is reached', async () => {
      const hub = new MemoryDirectoryHub();
      const job = uniqueJob();
      const first = await rendezvous.node(hub, task(job, 0), provider);
      const receiver = await rendezvous.node(hub, task(job, 1), provider);
      const oldKey = createKey(device(task(job, 0)), first.endpoint.incarnation, device(task(job, 1)), 'x');
      await first.mgr.close();
      await first.endpoint.close();
      const second = await rendezvous.node(hub, task(job, 0), provider);
      expect(second.endpoint.incarnation).not.toBe(first.endpoint.incarnation);
      await expectRejects(receiver.mgr.find(1).recv(oldKey, WAIT), 'ERR_RVMA_PEER_LOST');
      const newKey = createKey(device(task(job, 0)), second.endpoint.incarnation, device(task(job, 1)), 'x');
      const t = floats([3], 1);
      const got = receiver.mgr.find(1).recv(newKey, WAIT);
      second.mgr.find(1).send(newKey, t);
      sameBytes((await got).tensor, t);
    });

    test('a stale directory record naming an old incarnation of the sender: the recv rejects with ERR_RVMA_PEER_LOST', async () => {
      // Separate hubs: the receiver's holds a record of the sender with an old incarnation.
      const job = uniqueJob();
      const senderHub = new MemoryDirectoryHub();
      const receiverHub = new MemoryDirectoryHub();
      const sender = await rendezvous.node(senderHub, task(job, 0), provider);
      const receiver = await rendezvous.node(receiverHub, task(job, 1), provider);
      const staleIncarnation = 'abcdef0123456789';
      receiverHub.add([{ ...(await sender.endpoint.directory.resolveNode(sender.endpoint.nodeId))!, incarnation: staleIncarnation }]);
      senderHub.add([(await receiver.endpoint.directory.resolveNode(receiver.endpoint.nodeId))!]);
      const k = createKey(device(task(job, 0)), staleIncarnation, device(task(job, 1)), 'x');
      await expectRejects(receiver.mgr.find(1).recv(k, WAIT), 'ERR_RVMA_PEER_LOST');
    });
  });
});
