// Peers that die or fall silent in the middle of a put, over every transport. Processes are
// frozen with SIGSTOP (and the test waits until every thread is stopped) to hold a put provably
// half-way; how much of it a frozen receiver can have placed depends on the transport (partialPut).
import { readFileSync } from 'node:fs';
import { Endpoint, type EndpointOptions, type PeerLostInfo } from '../../src';
import { killSenderMidPut, provenConnection, seededBytes, sha256, startAgent, trackChildren, waitFor, waitStopped } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { DEFAULT_RING_BYTES, type Transport, transportCases } from '../helpers/transports';

const MiB = 1 << 20;
const BIG = 64 * MiB;

/** The largest size a tcp socket buffer of this kind (rmem, wmem) grows to. */
const tcpBufferMax = (kind: string): number => Number(readFileSync(`/proc/sys/net/ipv4/tcp_${kind}`, 'utf8').trim().split(/\s+/)[2]);

/**
 * Bytes of a BIG put that a receiver, frozen before the put was sent, places once its sender
 * died (the put is never committed either way):
 * - tcp: what its kernel holds, read in stream order before the close: at least the head (the
 *   sender's first write went out before it reported), at most both socket buffers' worth.
 * - shm with cma: nothing. The receiver pulls a put whole, from a process that is gone.
 * - shm, copy: what sat in the ring, or nothing if the close is seen first. A chunk record is
 *   64 bytes + ringBytes / 4, so at most three chunks fit.
 */
function partialPut(transport: Transport): { min: number; max: number } {
  if (transport.provider === 'tcp') return { min: 16, max: tcpBufferMax('rmem') + tcpBufferMax('wmem') };
  if (transport.detail === 'cma') return { min: 0, max: 0 };
  return { min: 0, max: 3 * (DEFAULT_RING_BYTES / 4) };
}

describe.each(transportCases())('peer loss over %s (%s progress)', (_name, progress, transport) => {
  const children = trackChildren('each');
  const options = { progress, ...transport.options };
  let endpoint: Endpoint | undefined;

  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  /** An endpoint of the test process, closed after the test, with the peers it lost. */
  async function localEndpoint(label: string, extra: EndpointOptions = {}): Promise<{ local: Endpoint; lost: PeerLostInfo[] }> {
    const local = await Endpoint.create({ nodeId: uniqueNodeId(label), ...options, ...extra });
    endpoint = local;
    const lost: PeerLostInfo[] = [];
    local.on('peerLost', (info: PeerLostInfo) => lost.push(info));
    return { local, lost };
  }

  test('a sender killed mid-put: no completion for the partial put, the next sender completes with its own bytes only', async () => {
    const receiver = await startAgent(children, `receiver-${progress}`, { listen: transport.listen('receiver'), ...options });
    const v = VADDR.toString();
    await receiver.child.request({ cmd: 'open', vaddr: v });
    // Ends after 1 MiB: the partial 64 MiB put would end it too if it were ever counted.
    await receiver.child.request({ cmd: 'post', vaddr: v, size: BIG, threshold: MiB });

    // The victim uses 'loop' progress, so its first write happens on its JS thread as soon as
    // the put is submitted, before it reports and blocks: the put is certainly on its way, and
    // with the receiver stopped it certainly cannot finish.
    const victim = await startAgent(children, 'victim', { ...options, progress: 'loop' });
    await provenConnection(victim, receiver, VADDR + 1n);
    await killSenderMidPut(victim, receiver, v, BIG);

    const { min, max } = partialPut(transport);
    if (min > 0) {
      // The head of the dead sender's payload does reach the buffer (the put really was half placed).
      const head = seededBytes(16, 1).toString('hex');
      await waitFor('partial payload placed', async () => {
        const read = await receiver.child.request({ cmd: 'read', vaddr: v, start: 0, end: 16 });
        return read.hex === head;
      });
    }
    // Its connection to the dead sender is closed, and with it the put's reservation...
    await receiver.child.next((m) => m.type === 'peerLost' && m.nodeId === victim.nodeId, 20_000);
    expect(await receiver.child.request({ cmd: 'status', vaddr: v })).toMatchObject({ epoch: 0, postedCount: 1 });
    // ...having placed no more than the transport lets through, and only the put's own bytes.
    const placed = await receiver.child.request({ cmd: 'extent', vaddr: v });
    expect(placed.end).toBeGreaterThanOrEqual(min);
    expect(placed.end).toBeLessThanOrEqual(max);
    expect(placed.sha256).toBe(sha256(seededBytes(placed.end as number, 1)));

    // ...so the buffer takes a new sender's put, and its epoch holds that put only.
    const { local } = await localEndpoint('second');
    const data = seededBytes(MiB, 2);
    const report = receiver.child.request({ cmd: 'next', vaddr: v, hashBytes: MiB, timeout: 20_000 }, 30_000);
    const [done] = await Promise.all([report, local.put(receiver.address, VADDR, data, { offset: 0, timeout: 20_000 })]);
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: MiB, ops: 1, mailboxEpoch: 1 });
    expect(done.sha256).toBe(sha256(data));
  }, 60_000);

  test('the receiver killed mid-put: the pending put rejects with ERR_RVMA_PEER_LOST and peerLost names it', async () => {
    const receiver = await startAgent(children, 'receiver', { listen: transport.listen('receiver'), ...options });
    const v = VADDR.toString();
    await receiver.child.request({ cmd: 'open', vaddr: v });
    await receiver.child.request({ cmd: 'post', vaddr: v, size: BIG });

    // The kill, not the stopped receiver's silence, must end the connection: on a slow machine
    // (ASan) the steps below can outlast tcp's default 5 s peer timeout, and the second connect
    // would then dial the stopped receiver anew and time out.
    const patient: EndpointOptions = transport.provider === 'tcp' ? { tcp: { peerTimeoutMs: 60_000 } } : {};
    const { local, lost } = await localEndpoint('sender', patient);
    expect(await local.connect(receiver.address, { timeout: 15_000 })).toBe(receiver.nodeId);
    receiver.child.signal('SIGSTOP');
    await waitStopped(receiver.child.pid);
    // Put by address, the put is handed to the native side at once, and the connect after it
    // is answered only after it (one queue, in order), on the same live connection: so the put
    // is certainly pending there when the kill comes (the stopped receiver cannot take it).
    // The loss, not the put's timeout (ERR_RVMA_TIMEOUT), must end it.
    const pending = expectRejects(local.put(receiver.address, VADDR, seededBytes(BIG, 3), { timeout: 20_000 }), 'ERR_RVMA_PEER_LOST');
    expect(await local.connect(receiver.address, { timeout: 15_000 })).toBe(receiver.nodeId);
    await receiver.child.kill();
    await pending;
    // Reported before the put it failed, in either progress mode. The reason is the provider's
    // own words (tcp: reconnecting was refused; shm: the peer closed).
    expect(lost).toEqual([{ nodeId: receiver.nodeId, incarnation: receiver.incarnation, reason: expect.stringMatching(/refused|closed/) }]);
  }, 60_000);

  test('a receiver restarted under the same node id and address is reached again by node id', async () => {
    const nodeId = uniqueNodeId('receiver');
    const first = await startAgent(children, 'receiver-1', { nodeId, listen: transport.listen('receiver'), ...options });
    const { local } = await localEndpoint('sender');
    expect(await local.connect(first.address, { timeout: 15_000 })).toBe(nodeId);
    await first.child.kill();

    // Same node id, same address, new process: a put by node id dials the address again.
    const second = await startAgent(children, 'receiver-2', { nodeId, listen: first.address, ...options });
    expect(second.address).toBe(first.address);
    const v = VADDR.toString();
    await second.child.request({ cmd: 'open', vaddr: v });
    await second.child.request({ cmd: 'post', vaddr: v, size: MiB });
    const data = seededBytes(MiB, 4);
    const report = second.child.request({ cmd: 'next', vaddr: v, timeout: 20_000 }, 30_000);
    const [done] = await Promise.all([report, local.put(nodeId, VADDR, data, { timeout: 20_000 })]);
    expect(done).toMatchObject({ epoch: 1, bytes: MiB, ops: 1 });
    expect(done.sha256).toBe(sha256(data));
  }, 60_000);

  if (transport.provider === 'tcp') {
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
  }

  if (transport.provider === 'shm') {
    test('a silent peer (SIGSTOP) is not lost over shm: a put to it times out, and once resumed it places that put late and takes new ones', async () => {
      const peer = await startAgent(children, `silent-${progress}`, { listen: transport.listen('silent'), ...options });
      const [late, next] = [VADDR.toString(), (VADDR + 1n).toString()];
      // Larger than a ring: pulled whole (cma), or chunked through a ring that fills up (copy).
      const size = 2 * DEFAULT_RING_BYTES + 5;
      await peer.child.request({ cmd: 'open', vaddr: late });
      await peer.child.request({ cmd: 'post', vaddr: late, size });
      await peer.child.request({ cmd: 'open', vaddr: next });
      await peer.child.request({ cmd: 'post', vaddr: next, size: 16 });

      const { local, lost } = await localEndpoint('prober');
      expect(await local.connect(peer.address, { timeout: 15_000 })).toBe(peer.nodeId);
      peer.child.signal('SIGSTOP');
      await waitStopped(peer.child.pid);
      // A unix socket has nothing to time out on: only the put's own timeout ends the wait.
      const data = seededBytes(size, 6);
      await expectRejects(local.put(peer.nodeId, VADDR, data, { timeout: 500 }), 'ERR_RVMA_TIMEOUT');

      // The put stayed in the ring (or in the sender's queue): resumed, the peer places it,
      // reading the sender's bytes, which the sender kept until the native side let them go.
      peer.child.signal('SIGCONT');
      const placed = await peer.child.request({ cmd: 'next', vaddr: late, timeout: 20_000 }, 30_000);
      expect(placed).toMatchObject({ epoch: 1, bytes: size, ops: 1, sha256: sha256(data) });
      const fresh = seededBytes(16, 7);
      const report = peer.child.request({ cmd: 'next', vaddr: next, timeout: 20_000 }, 30_000);
      const [done] = await Promise.all([report, local.put(peer.nodeId, VADDR + 1n, fresh, { timeout: 20_000 })]);
      expect(done).toMatchObject({ epoch: 1, bytes: 16, ops: 1, sha256: sha256(fresh) });
      // The same connection carried both: the peer was never lost.
      expect(lost).toEqual([]);
      expect(local.peers()).toEqual([{ nodeId: peer.nodeId, provider: 'shm', detail: transport.detail }]);
    }, 60_000);
  }
});
