// Verbs peers that fall silent or die, across real processes (test/fixtures/tcp-agent.js with
// provider 'verbs'). A stopped process's RDMA device still acknowledges every packet, so
// only the keepalive notices it. Runs inside the Soft-RoCE guest only.
import { PeerLostInfo } from '../../src';
import { seededBytes, sha256, startAgent, trackChildren, waitStopped } from '../helpers/children';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { RDMA_ADDR, describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const LISTEN = `rdma://${RDMA_ADDR}:0`;
const WAIT = 60_000; // bounds each wait; a guest runs JavaScript ~8x slower than the host

describeInGuest('verbs peer loss', () => {
  jest.setTimeout(180_000);
  const children = trackChildren('each');

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

      // Resumed, the peer may still place the lost put (the prober cannot know): the check
      // uses a mailbox of its own. The put names the node id: the prober dials it again.
      peer.child.signal('SIGCONT');
      const v2 = (VADDR + 1n).toString();
      await peer.child.request({ cmd: 'open', vaddr: v2 });
      await peer.child.request({ cmd: 'post', vaddr: v2, size: 16 });
      const report = peer.child.request({ cmd: 'next', vaddr: v2, timeout: WAIT }, WAIT);
      const data = seededBytes(16, 5);
      await prober.put(peer.nodeId, VADDR + 1n, data, { timeout: WAIT });
      const done = await report;
      expect(done).toMatchObject({ epoch: 1, bytes: 16, ops: 1 });
      expect(done.sha256).toBe(sha256(data));
    });
  });
});
