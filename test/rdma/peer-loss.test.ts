// Verbs peers that fall silent or die, across real processes (test/fixtures/agent.js with
// provider 'verbs'). A stopped process's RDMA device still acknowledges every packet, so
// only the keepalive notices it. Processes are frozen with SIGSTOP (the test waits until every
// thread is stopped) to hold a put provably half-way: a stopped receiver has not read it yet.
// Runs inside the Soft-RoCE guest only.
import { type PeerLostInfo } from '../../src';
import { killSenderMidPut, provenConnection, seededBytes, sha256, startAgent, trackChildren, waitStopped } from '../helpers/children';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { RDMA_ADDR, describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const LISTEN = `rdma://${RDMA_ADDR}:0`;
const WAIT = 60_000; // bounds each wait; a guest runs JavaScript ~8x slower than the host
const MiB = 1 << 20;
const BIG = 4 * MiB; // read by the receiver (RDMA read), so it needs the receiver's attention

describeInGuest('verbs peer loss', () => {
  jest.setTimeout(180_000);
  const children = trackChildren('each');

  test('an endpoint whose own loop stalls past the peer timeout keeps its peers (the stall is not their silence)', async () => {
    // Both endpoints in this process, loop progress: both stall at once, as when a test computes large tensors.
    const verbs = { keepaliveMs: 200, peerTimeoutMs: 2000 };
    const receiver = await verbsEndpoint(endpoints, 'loop', { verbs });
    const sender = await verbsEndpoint(endpoints, 'loop', { verbs });
    const lost: PeerLostInfo[] = [];
    for (const e of [receiver, sender]) e.on('peerLost', (info: PeerLostInfo) => lost.push(info));
    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(16, { threshold: 16 });
    await sender.put(receiver.address!, VADDR, seededBytes(8, 1), { timeout: WAIT });
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3 * verbs.peerTimeoutMs);
    await new Promise((resolve) => setTimeout(resolve, 4 * verbs.keepaliveMs));
    await sender.put(receiver.nodeId, VADDR, seededBytes(8, 2), { offset: 8n, timeout: WAIT });
    const done = await mailbox.next({ timeout: WAIT });
    expect(Buffer.from(done.buffer).toString('hex')).toBe(seededBytes(8, 1).toString('hex') + seededBytes(8, 2).toString('hex'));
    expect(lost).toEqual([]);
  });

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    test('a silent peer (SIGSTOP) is lost by the keepalive: the pending put rejects PEER_LOST, peerLost fires, the next put redials it', async () => {
      const peer = await startAgent(children, `silent-${progress}`, { progress, provider: 'verbs', listen: LISTEN });
      const v = VADDR.toString();
      await peer.child.request({ cmd: 'open', vaddr: v });
      await peer.child.request({ cmd: 'post', vaddr: v, size: 16 });

      const prober = await verbsEndpoint(endpoints, progress, { verbs: { keepaliveMs: 200, peerTimeoutMs: 2000 } });
      expect(await prober.connect(peer.address, { timeout: WAIT })).toBe(peer.nodeId);
      const lost = new Promise<PeerLostInfo>((resolve) => prober.once('peerLost', resolve));
      peer.child.signal('SIGSTOP');
      await waitStopped(peer.child.pid);
      await expectRejects(prober.put(peer.nodeId, VADDR, Buffer.alloc(16, 1), { timeout: WAIT }), 'ERR_RVMA_PEER_LOST');
      const info = await lost;
      expect(info.nodeId).toBe(peer.nodeId);
      expect(info.incarnation).toMatch(/^[0-9a-f]{16}$/);
      expect(info.reason).toMatch(/^peer silent for \d+ ms$/);

      // Resumed, the peer may still place the lost put (the prober cannot know): the check
      // uses a mailbox of its own. The put names the node id: the prober dials it again.
      peer.child.signal('SIGCONT');
      const v2 = (VADDR + 1n).toString();
      await peer.child.request({ cmd: 'open', vaddr: v2 });
      await peer.child.request({ cmd: 'post', vaddr: v2, size: 16 });
      const data = seededBytes(16, 5);
      await prober.put(peer.nodeId, VADDR + 1n, data, { timeout: WAIT });
      const done = await peer.child.request({ cmd: 'next', vaddr: v2, timeout: WAIT }, WAIT);
      expect(done).toMatchObject({ epoch: 1, bytes: 16, ops: 1 });
      expect(done.sha256).toBe(sha256(data));
    });

    test('a node that dialed us, once lost, is dialed back by node id at the port its hello announced', async () => {
      const peer = await startAgent(children, `dialer-${progress}`, { progress, provider: 'verbs', listen: LISTEN });
      const v = VADDR.toString();
      await peer.child.request({ cmd: 'open', vaddr: v });
      await peer.child.request({ cmd: 'post', vaddr: v, size: 16 });
      await peer.child.request({ cmd: 'post', vaddr: v, size: 16 });
      const acceptor = await verbsEndpoint(endpoints, progress, { verbs: { keepaliveMs: 200, peerTimeoutMs: 2000 } });
      expect(await peer.child.request({ cmd: 'connect', address: acceptor.address, timeout: WAIT }, WAIT)).toMatchObject({ node: acceptor.nodeId });
      // A put by node id over the accepted connection: this side knows the peer.
      await acceptor.put(peer.nodeId, VADDR, seededBytes(16, 5), { timeout: WAIT });
      expect(await peer.child.request({ cmd: 'next', vaddr: v, timeout: WAIT }, WAIT)).toMatchObject({ epoch: 1, sha256: sha256(seededBytes(16, 5)) });

      const lost = new Promise<PeerLostInfo>((resolve) => acceptor.once('peerLost', resolve));
      peer.child.signal('SIGSTOP');
      await waitStopped(peer.child.pid);
      expect((await lost).nodeId).toBe(peer.nodeId);
      peer.child.signal('SIGCONT');

      // The only way back to the peer is a new connection from this side.
      const data = seededBytes(16, 6);
      await acceptor.put(peer.nodeId, VADDR, data, { timeout: WAIT });
      const done = await peer.child.request({ cmd: 'next', vaddr: v, timeout: WAIT }, WAIT);
      expect(done).toMatchObject({ epoch: 2, bytes: 16, ops: 1, sha256: sha256(data) });
    });

    test('a sender killed mid-put: no completion for its put, the next sender completes with its own bytes only', async () => {
      const receiver = await startAgent(children, `receiver-${progress}`, { progress, provider: 'verbs', listen: LISTEN });
      const v = VADDR.toString();
      await receiver.child.request({ cmd: 'open', vaddr: v });
      // Ends after 1 MiB: the dead sender's put would end it too if it were ever counted.
      await receiver.child.request({ cmd: 'post', vaddr: v, size: BIG, threshold: MiB });

      // The victim uses 'loop' progress, so its request to send goes out on its JS thread as
      // soon as the put is submitted, before it reports and blocks; the stopped receiver has
      // certainly not read any of it.
      const victim = await startAgent(children, 'victim', { progress: 'loop', provider: 'verbs' });
      await provenConnection(victim, receiver, VADDR + 1n);
      await killSenderMidPut(victim, receiver, v, BIG);

      // Its connection to the dead sender is closed (and with it the put's reservation)...
      await receiver.child.next((m) => m.type === 'peerLost' && m.nodeId === victim.nodeId, WAIT);
      expect(await receiver.child.request({ cmd: 'status', vaddr: v })).toMatchObject({ epoch: 0, postedCount: 1 });
      // ...so the buffer takes a new sender's put, and its epoch holds that put only.
      const sender = await verbsEndpoint(endpoints, progress);
      const data = seededBytes(MiB, 2);
      await sender.put(receiver.address, VADDR, data, { offset: 0, timeout: WAIT });
      const done = await receiver.child.request({ cmd: 'next', vaddr: v, hashBytes: MiB, timeout: WAIT }, WAIT);
      expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: MiB, ops: 1, mailboxEpoch: 1 });
      expect(done.sha256).toBe(sha256(data));
    });

    test('the receiver killed mid-put: the pending put rejects PEER_LOST, and a new receiver process is reached by node id', async () => {
      const nodeId = uniqueNodeId('receiver');
      const first = await startAgent(children, 'receiver-1', { nodeId, progress, provider: 'verbs', listen: LISTEN });
      const v = VADDR.toString();
      await first.child.request({ cmd: 'open', vaddr: v });
      await first.child.request({ cmd: 'post', vaddr: v, size: BIG });

      const sender = await verbsEndpoint(endpoints, progress);
      expect(await sender.connect(first.address, { timeout: WAIT })).toBe(nodeId);
      first.child.signal('SIGSTOP');
      await waitStopped(first.child.pid);
      const pending = sender.put(nodeId, VADDR, seededBytes(BIG, 3), { timeout: WAIT });
      await first.child.kill();
      await expectRejects(pending, 'ERR_RVMA_PEER_LOST');

      // Same node id, same address, new process: a put by node id dials the address again.
      const second = await startAgent(children, 'receiver-2', { nodeId, progress, provider: 'verbs', listen: first.address });
      expect(second.address).toBe(first.address);
      await second.child.request({ cmd: 'open', vaddr: v });
      await second.child.request({ cmd: 'post', vaddr: v, size: MiB });
      const data = seededBytes(MiB, 4);
      await sender.put(nodeId, VADDR, data, { timeout: WAIT });
      const done = await second.child.request({ cmd: 'next', vaddr: v, timeout: WAIT }, WAIT);
      expect(done).toMatchObject({ epoch: 1, bytes: MiB, ops: 1 });
      expect(done.sha256).toBe(sha256(data));
    });
  });
});
