// Refusals across processes, over every transport: each NACK code reaches the sender as a
// typed error, and the connection survives it. The receiver child dials the test process and
// listens at no address the test process knows, so the test process cannot dial it again: if
// a NACK had cost the connection, the following put would fail with ERR_RVMA_NO_PEER instead
// of succeeding.
import { Endpoint, type RvmaErrorCode } from '../../src';
import { type Agent, startAgent, trackChildren } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { transportCases } from '../helpers/transports';

const MARKER = VADDR; // on the test process: the child's first put proves the handshake
const UNBUFFERED = VADDR + 1n; // on the child: open, nothing posted
const TARGET = VADDR + 2n; // on the child: one 64-byte buffer, ops epoch that never ends here
const UNKNOWN = VADDR + 3n; // on the child: never opened

describe.each(transportCases())('NACKs across processes over %s (%s progress)', (_name, progress, transport) => {
  const children = trackChildren('each');
  let endpoint: Endpoint | undefined;

  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  async function setup(): Promise<{ sender: Endpoint; agent: Agent; protocolErrors: unknown[] }> {
    const sender = await Endpoint.create({ nodeId: uniqueNodeId('nack'), progress, listen: transport.listen('nack'), ...transport.options });
    endpoint = sender;
    const protocolErrors: unknown[] = [];
    sender.on('protocolError', (info) => protocolErrors.push(info));
    const marker = sender.openMailbox(MARKER, { epoch: 'ops' });
    marker.post(1);

    const agent = await startAgent(children, `receiver-${progress}`, { progress, ...transport.options });
    expect(agent.address).toBe('');
    await agent.child.request({ cmd: 'open', vaddr: UNBUFFERED.toString() });
    await agent.child.request({ cmd: 'open', vaddr: TARGET.toString(), options: { epoch: 'ops', threshold: 1000 } });
    await agent.child.request({ cmd: 'post', vaddr: TARGET.toString(), size: 64 });
    expect((await agent.child.request({ cmd: 'connect', address: sender.address })).node).toBe(sender.nodeId);
    await agent.child.request({ cmd: 'put', target: sender.nodeId, vaddr: MARKER.toString(), hex: '01' });
    await marker.next({ timeout: 20_000 }); // the test process has seen the child's hello
    return { sender, agent, protocolErrors };
  }

  // lazyAck: the receiver may hold back the acknowledgements of the good puts, never a refusal.
  test.each([
    ['', false],
    [' (lazy acks)', true],
  ])('NO_MAILBOX, NO_BUFFER, OUT_OF_BOUNDS, TOO_LARGE reach the sender; each following put succeeds%s', async (_label, lazyAck) => {
    const { sender, agent, protocolErrors } = await setup();
    const cases: { code: RvmaErrorCode; vaddr: bigint; size: number; offset?: number }[] = [
      { code: 'ERR_RVMA_NO_MAILBOX', vaddr: UNKNOWN, size: 8 },
      { code: 'ERR_RVMA_NO_BUFFER', vaddr: UNBUFFERED, size: 8 },
      { code: 'ERR_RVMA_OUT_OF_BOUNDS', vaddr: TARGET, size: 16, offset: 60 },
      { code: 'ERR_RVMA_OUT_OF_BOUNDS', vaddr: TARGET, size: 1, offset: 64 },
      { code: 'ERR_RVMA_TOO_LARGE', vaddr: TARGET, size: 65 },
      // A refused put with a large payload: the receiver must skip exactly its bytes (over shm
      // it is not pulled, or its chunks are read and dropped).
      { code: 'ERR_RVMA_TOO_LARGE', vaddr: TARGET, size: 3 << 20 },
      { code: 'ERR_RVMA_NO_MAILBOX', vaddr: UNKNOWN, size: 1 << 20 },
    ];
    const expected = Buffer.alloc(64);
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i];
      const refused = Buffer.alloc(c.size, 0xee);
      await expectRejects(sender.put(agent.nodeId, c.vaddr, refused, { offset: c.offset, timeout: 15_000, lazyAck }), c.code);
      const good = Buffer.alloc(8, i + 1);
      await sender.put(agent.nodeId, TARGET, good, { offset: i * 8, timeout: 15_000, lazyAck });
      good.copy(expected, i * 8);
    }
    // The refused bytes went nowhere; the accepted ones are exactly where they were put.
    const read = await agent.child.request({ cmd: 'read', vaddr: TARGET.toString(), start: 0, end: 64 });
    expect(read.hex).toBe(expected.toString('hex'));
    const status = await agent.child.request({ cmd: 'status', vaddr: TARGET.toString() });
    expect(status).toMatchObject({ epoch: 0, postedCount: 1 });
    expect(protocolErrors).toEqual([]);

    // Control for the argument above: once that connection is gone, the child is unreachable.
    await agent.child.kill();
    await sender.put(agent.nodeId, TARGET, Buffer.alloc(1), { timeout: 15_000 }).catch(() => undefined);
    await expectRejects(sender.put(agent.nodeId, TARGET, Buffer.alloc(1), { timeout: 15_000 }), 'ERR_RVMA_NO_PEER');
  }, 60_000);

  test('refusals and successes interleaved concurrently each get their own answer', async () => {
    const { sender, agent, protocolErrors } = await setup();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 64 }, (_, i) => {
        const kind = i % 4;
        if (kind === 0) return sender.put(agent.nodeId, UNKNOWN, Buffer.alloc(4), { timeout: 15_000 });
        if (kind === 1) return sender.put(agent.nodeId, UNBUFFERED, Buffer.alloc(4), { timeout: 15_000 });
        if (kind === 2) return sender.put(agent.nodeId, TARGET, Buffer.alloc(65), { timeout: 15_000 });
        return sender.put(agent.nodeId, TARGET, Buffer.alloc(4, i), { offset: (i >> 2) * 4, timeout: 15_000 });
      }),
    );
    const codes = outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : (o.reason as { code: string }).code));
    expect(codes).toEqual(
      Array.from({ length: 64 }, (_, i) => ['ERR_RVMA_NO_MAILBOX', 'ERR_RVMA_NO_BUFFER', 'ERR_RVMA_TOO_LARGE', 'ok'][i % 4]),
    );
    const expected = Buffer.alloc(64);
    for (let i = 3; i < 64; i += 4) expected.fill(i, (i >> 2) * 4, (i >> 2) * 4 + 4);
    const read = await agent.child.request({ cmd: 'read', vaddr: TARGET.toString(), start: 0, end: 64 });
    expect(read.hex).toBe(expected.toString('hex'));
    expect(protocolErrors).toEqual([]);
  }, 60_000);
});
