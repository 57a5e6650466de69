// Peers that die or fall silent in the middle of a put. Processes are frozen with SIGSTOP
// (and the test waits until every thread is stopped) to hold a put provably half-way: a
// stopped receiver reads nothing, so at most its socket buffers' worth of a 64 MiB put can
// have left the sender.
import { Endpoint } from '../../src';
import { killSenderMidPut, provenConnection, seededBytes, sha256, startAgent, trackChildren, waitFor, waitStopped } from '../helpers/children';
import { PROGRESS_MODES, VADDR, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';

const MiB = 1 << 20;
const BIG = 64 * MiB;

describe.each(PROGRESS_MODES)('tcp peer loss (%s progress)', (progress) => {
  const children = trackChildren('each');
  let endpoint: Endpoint | undefined;

  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  test('a sender killed mid-put: no completion for the partial put, the next sender completes with its own bytes only', async () => {
    const receiver = await startAgent(children, `receiver-${progress}`, { progress, listen: 'tcp://127.0.0.1:0' });
    const v = VADDR.toString();
    await receiver.child.request({ cmd: 'open', vaddr: v });
    // Ends after 1 MiB: the partial 64 MiB put would end it too if it were ever counted.
    await receiver.child.request({ cmd: 'post', vaddr: v, size: BIG, threshold: MiB });

    // The victim uses 'loop' progress, so its first write happens on its JS thread as soon as
    // the put is submitted, before it reports and blocks: the put is certainly on the wire, and
    // with the receiver stopped it certainly cannot finish.
    const victim = await startAgent(children, 'victim', { progress: 'loop' });
    await provenConnection(victim, receiver, VADDR + 1n);
    await killSenderMidPut(victim, receiver, v, BIG);

    // The head of the dead sender's payload does reach the buffer (the put really was half
    // placed), yet no epoch ends.
    const head = seededBytes(16, 1).toString('hex');
    await waitFor('partial payload placed', async () => {
      const read = await receiver.child.request({ cmd: 'read', vaddr: v, start: 0, end: 16 });
      return read.hex === head;
    });
    // Its connection to the dead sender is closed, and with it the put's reservation...
    await receiver.child.next((m) => m.type === 'peerLost' && m.nodeId === victim.nodeId, 20_000);
    expect(await receiver.child.request({ cmd: 'status', vaddr: v })).toMatchObject({ epoch: 0, postedCount: 1 });

    // ...so the buffer takes a new sender's put, and its epoch holds that put only.
    endpoint = await Endpoint.create({ nodeId: uniqueNodeId('second'), progress });
    const data = seededBytes(MiB, 2);
    const report = receiver.child.request({ cmd: 'next', vaddr: v, hashBytes: MiB, timeout: 20_000 }, 30_000);
    await endpoint.put(receiver.address, VADDR, data, { offset: 0, timeout: 20_000 });
    const done = await report;
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: MiB, ops: 1, mailboxEpoch: 1 });
    expect(done.sha256).toBe(sha256(data));
  }, 60_000);

  test('the receiver killed mid-put: the pending put rejects with ERR_RVMA_PEER_LOST, and a new receiver process is reached again', async () => {
    const nodeId = uniqueNodeId('receiver');
    const first = await startAgent(children, 'receiver-1', { nodeId, progress, listen: 'tcp://127.0.0.1:0' });
    const v = VADDR.toString();
    await first.child.request({ cmd: 'open', vaddr: v });
    await first.child.request({ cmd: 'post', vaddr: v, size: BIG });

    endpoint = await Endpoint.create({ nodeId: uniqueNodeId('sender'), progress });
    expect(await endpoint.connect(first.address, { timeout: 15_000 })).toBe(nodeId);
    first.child.signal('SIGSTOP');
    await waitStopped(first.child.pid);
    const pending = endpoint.put(nodeId, VADDR, seededBytes(BIG, 3), { timeout: 20_000 });
    await first.child.kill();
    await expectRejects(pending, 'ERR_RVMA_PEER_LOST');

    // Same node id, same address, new process: a put by node id dials the address again.
    const second = await startAgent(children, 'receiver-2', { nodeId, progress, listen: first.address });
    expect(second.address).toBe(first.address);
    await second.child.request({ cmd: 'open', vaddr: v });
    await second.child.request({ cmd: 'post', vaddr: v, size: MiB });
    const data = seededBytes(MiB, 4);
    const report = second.child.request({ cmd: 'next', vaddr: v, timeout: 20_000 }, 30_000);
    await endpoint.put(nodeId, VADDR, data, { timeout: 20_000 });
    const done = await report;
    expect(done).toMatchObject({ epoch: 1, bytes: MiB, ops: 1 });
    expect(done.sha256).toBe(sha256(data));
  }, 60_000);

  test('a silent peer (SIGSTOP after the handshake) is lost within the keepalive and reconnect bounds; once resumed it is reached again', async () => {
    const peer = await startAgent(children, `silent-${progress}`, { progress, listen: 'tcp://127.0.0.1:0' });
    const v = VADDR.toString();
    await peer.child.request({ cmd: 'open', vaddr: v });
    await peer.child.request({ cmd: 'post', vaddr: v, size: 16 });

    endpoint = await Endpoint.create({
      nodeId: uniqueNodeId('prober'),
      progress,
      tcp: { keepaliveMs: 100, peerTimeoutMs: 500 },
    });
    expect(await endpoint.connect(peer.address, { timeout: 15_000 })).toBe(peer.nodeId);
    peer.child.signal('SIGSTOP');
    await waitStopped(peer.child.pid);
    // The kernel still acknowledges TCP segments for the stopped process; only the missing
    // pongs reveal it. Then the prober dials it again (tcp.reconnectMs): the kernel accepts,
    // but no hello comes, so the put fails once the reconnect bound has passed. The put's own
    // timeout bounds the wait.
    await expectRejects(endpoint.put(peer.nodeId, VADDR, Buffer.alloc(16, 1), { timeout: 15_000 }), 'ERR_RVMA_PEER_LOST');

    // Resumed, the peer still reads what its kernel had queued, so the lost put may yet be
    // placed there (the sender cannot know): the check below uses a mailbox of its own. It
    // puts from an endpoint with default timeouts, so a loaded machine cannot fail it.
    peer.child.signal('SIGCONT');
    const v2 = (VADDR + 1n).toString();
    await peer.child.request({ cmd: 'open', vaddr: v2 });
    await peer.child.request({ cmd: 'post', vaddr: v2, size: 16 });
    const report = peer.child.request({ cmd: 'next', vaddr: v2, timeout: 20_000 }, 30_000);
    const data = seededBytes(16, 5);
    const patient = await Endpoint.create({ nodeId: uniqueNodeId('patient'), progress });
    try {
      await patient.put(peer.address, VADDR + 1n, data, { timeout: 20_000 });
    } finally {
      await patient.close();
    }
    const done = await report;
    expect(done).toMatchObject({ epoch: 1, bytes: 16, ops: 1 });
    expect(done.sha256).toBe(sha256(data));
  }, 60_000);
});
