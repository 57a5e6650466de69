// Exact bytes across processes, over every transport: the test process puts random bytes into
// a child's mailbox, the child reports a sha256 of its completed buffer and puts the same
// buffer back, and the test compares every returned byte with what it sent.
import { randomBytes } from 'node:crypto';
import { Endpoint, type Mailbox } from '../../src';
import { type Agent, sha256, startAgent, trackChildren } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { SANITIZED, transportCases } from '../helpers/transports';

const KiB = 1 << 10;
const MiB = 1 << 20;
// Around shm's eager limit (16 KiB inline, larger pulled or chunked) and its 1 MiB ring.
const SIZES = [1, 4 * KiB, 16 * KiB, 16 * KiB + 1, 64 * KiB, MiB, 16 * MiB, 64 * MiB];
// 256 MiB only over shm (slow over tcp), and not under ASan, where it is slow everywhere. At
// most one such buffer is alive per process at a time (plus the test's copy of the data).
const HUGE = 256 * MiB;

describe.each(transportCases())('byte equality across processes over %s (%s progress)', (_name, progress, transport) => {
  const children = trackChildren('all');
  let endpoint: Endpoint;
  let agent: Agent;
  const sizes = transport.provider === 'shm' && !SANITIZED ? [...SIZES, HUGE] : SIZES;

  beforeAll(async () => {
    const options = { progress, ...transport.options };
    endpoint = await Endpoint.create({ nodeId: uniqueNodeId('bytes'), listen: transport.listen('bytes'), ...options });
    agent = await startAgent(children, `bytes-${transport.name}-${progress}`, { listen: transport.listen('agent'), ...options });
    expect(await endpoint.connect(agent.address, { timeout: 10_000 })).toBe(agent.nodeId);
    expect(endpoint.peers()).toEqual([{ nodeId: agent.nodeId, provider: transport.provider, detail: transport.detail }]);
  }, 60_000);

  afterAll(async () => {
    await endpoint?.close();
  });

  test.each(sizes)('%i bytes arrive and come back byte for byte', async (size) => {
    const vaddr = VADDR + BigInt(size);
    const v = vaddr.toString();
    // The child's mailbox completes when all `size` bytes are placed (bytes epoch, default threshold).
    await agent.child.request({ cmd: 'open', vaddr: v });
    await agent.child.request({ cmd: 'post', vaddr: v, size });
    const back: Mailbox = endpoint.openMailbox(vaddr);
    const returned = back.post(size);

    const data = randomBytes(size);
    const report = agent.child.request({ cmd: 'next', vaddr: v, echo: { target: endpoint.nodeId, vaddr: v }, timeout: 100_000 }, 110_000);
    // Together: a failed put must not leave the report's rejection unhandled.
    const [child] = await Promise.all([report, endpoint.put(agent.nodeId, vaddr, data, { timeout: 100_000 })]);
    expect(child).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: size, ops: 1, mailboxEpoch: 1 });
    expect(child.sha256).toBe(sha256(data));

    const done = await back.next({ timeout: 100_000 });
    expect(done).toMatchObject({ epoch: 1, bytes: size, ops: 1 });
    expect(done.buffer).toBe(returned);
    // Buffer.equals compares every byte (memcmp), and reports one boolean instead of a huge diff.
    expect(Buffer.from(done.buffer.buffer, done.buffer.byteOffset, done.buffer.byteLength).equals(data)).toBe(true);
    back.close();
    await agent.child.request({ cmd: 'closeMailbox', vaddr: v }); // lets the child free its buffer
  }, 120_000);

  test('a put at an odd offset into a larger buffer changes exactly its own range', async () => {
    const vaddr = VADDR + 7n;
    const size = 2 * MiB;
    const offset = 12_345;
    const data = randomBytes(MiB + 3);
    await agent.child.request({ cmd: 'open', vaddr: vaddr.toString() });
    await agent.child.request({ cmd: 'post', vaddr: vaddr.toString(), size, threshold: data.length });
    const report = agent.child.request({ cmd: 'next', vaddr: vaddr.toString(), timeout: 25_000 }, 30_000);
    const [done] = await Promise.all([report, endpoint.put(agent.nodeId, vaddr, data, { offset, timeout: 25_000 })]);
    const expected = Buffer.alloc(size); // posted native buffers start zeroed
    data.copy(expected, offset);
    expect(done).toMatchObject({ bytes: data.length, ops: 1, sha256: sha256(expected) });
  }, 60_000);
});
