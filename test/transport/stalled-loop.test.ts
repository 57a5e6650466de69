// An endpoint whose own event loop stalls (a long computation or a GC pause on the JS thread,
// which runs the transport in loop progress) has heard nothing meanwhile, but that is not its
// peers' silence: it keeps them. Two tcp endpoints share this process, so both stall at once,
// as they did when a test computing large tensors lost its peers. tcp.reconnectMs 0: a
// connection wrongly judged dead would lose its peer (peerLost) instead of quietly redialing.
import { type Endpoint, type PeerLostInfo } from '../../src';
import { VADDR, trackEndpoints } from '../helpers/endpoints';

const endpoints = trackEndpoints();
const TCP = { keepaliveMs: 100, peerTimeoutMs: 500, reconnectMs: 0 };

/** Blocks this thread (and so the loop-progress transport) for ms milliseconds. */
function stall(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

async function pair(): Promise<{ a: Endpoint; b: Endpoint; lost: PeerLostInfo[] }> {
  const options = { provider: 'tcp' as const, progress: 'loop' as const, listen: 'tcp://127.0.0.1:0', tcp: TCP };
  const a = await endpoints.create(options);
  const b = await endpoints.create(options);
  const lost: PeerLostInfo[] = [];
  for (const e of [a, b]) e.on('peerLost', (info: PeerLostInfo) => lost.push(info));
  return { a, b, lost };
}

describe('a stalled event loop (tcp, loop progress)', () => {
  jest.setTimeout(30_000);

  test('a stall of three peer timeouts loses no peer; puts go on over the same connection', async () => {
    const { a, b, lost } = await pair();
    const mailbox = b.openMailbox(VADDR);
    mailbox.post(16, { threshold: 16 });
    await a.put(b.address!, VADDR, Buffer.alloc(8, 1), { timeout: 10_000 });
    stall(3 * TCP.peerTimeoutMs);
    // Several keepalive rounds after the stall: a connection judged silent would be gone by now.
    await new Promise((resolve) => setTimeout(resolve, 4 * TCP.keepaliveMs));
    await a.put(b.nodeId, VADDR, Buffer.alloc(8, 2), { offset: 8n, timeout: 10_000 });
    const done = await mailbox.next({ timeout: 10_000 });
    expect(Buffer.from(done.buffer).toString('hex')).toBe('01'.repeat(8) + '02'.repeat(8));
    expect(lost).toEqual([]);
  });

  test('a peer that really is gone is still lost, with the reason', async () => {
    const { a, b, lost } = await pair();
    b.openMailbox(VADDR).post(16);
    await a.put(b.address!, VADDR, Buffer.alloc(8), { timeout: 10_000 });
    stall(3 * TCP.peerTimeoutMs);
    const gone = b.nodeId;
    await b.close();
    for (const end = Date.now() + 10_000; lost.length === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
    expect(lost).toEqual([{ nodeId: gone, incarnation: expect.stringMatching(/^[0-9a-f]{16}$/), reason: expect.any(String) }]);
    expect(lost[0].reason).not.toBe('');
  });
});
