// Exact bytes across processes: the test process puts random bytes into a child's mailbox,
// the child reports a sha256 of its completed buffer and puts the same buffer back, and the
// test compares every returned byte with what it sent.
import { randomBytes } from 'node:crypto';
import { Endpoint, Mailbox } from '../../src';
import { Agent, sha256, startAgent, trackChildren } from '../helpers/children';
import { PROGRESS_MODES, VADDR, uniqueNodeId } from '../helpers/endpoints';

const MiB = 1 << 20;
const SIZES = [1, 4096, 64 * 1024, MiB, 16 * MiB, 64 * MiB];

describe.each(PROGRESS_MODES)('tcp byte equality across processes (%s progress)', (progress) => {
  const children = trackChildren('all');
  let endpoint: Endpoint;
  let agent: Agent;

  beforeAll(async () => {
    endpoint = await Endpoint.create({ nodeId: uniqueNodeId('bytes'), progress, listen: 'tcp://127.0.0.1:0' });
    agent = await startAgent(children, `bytes-${progress}`, { progress, listen: 'tcp://127.0.0.1:0' });
    expect(await endpoint.connect(agent.address, { timeout: 10_000 })).toBe(agent.nodeId);
  }, 60_000);

  afterAll(async () => {
    await endpoint?.close();
  });

  test.each(SIZES)('%i bytes arrive and come back byte for byte', async (size) => {
    const vaddr = VADDR + BigInt(size);
    // The child's mailbox completes when all `size` bytes are placed (bytes epoch, default threshold).
    await agent.child.request({ cmd: 'open', vaddr: vaddr.toString() });
    await agent.child.request({ cmd: 'post', vaddr: vaddr.toString(), size });
    const back: Mailbox = endpoint.openMailbox(vaddr);
    const returned = back.post(size);

    const data = randomBytes(size);
    const report = agent.child.request(
      { cmd: 'next', vaddr: vaddr.toString(), echo: { target: endpoint.nodeId, vaddr: vaddr.toString() }, timeout: 25_000 },
      30_000,
    );
    await endpoint.put(agent.nodeId, vaddr, data, { timeout: 25_000 });
    const child = await report;
    expect(child).toMatchObject({ epoch: 1, bufferIndex: 0, bytes: size, ops: 1, mailboxEpoch: 1 });
    expect(child.sha256).toBe(sha256(data));

    const done = await back.next({ timeout: 25_000 });
    expect(done).toMatchObject({ epoch: 1, bytes: size, ops: 1 });
    expect(done.buffer).toBe(returned);
    // Buffer.equals compares every byte (memcmp), and reports one boolean instead of a huge diff.
    expect(Buffer.from(done.buffer.buffer, done.buffer.byteOffset, done.buffer.byteLength).equals(data)).toBe(true);
    back.close();
  }, 60_000);

  test('a put at an odd offset into a larger buffer changes exactly its own range', async () => {
    const vaddr = VADDR + 7n;
    const size = 2 * MiB;
    const offset = 12_345;
    const data = randomBytes(MiB + 3);
    await agent.child.request({ cmd: 'open', vaddr: vaddr.toString() });
    await agent.child.request({ cmd: 'post', vaddr: vaddr.toString(), size, threshold: data.length });
    const report = agent.child.request({ cmd: 'next', vaddr: vaddr.toString(), timeout: 25_000 }, 30_000);
    await endpoint.put(agent.nodeId, vaddr, data, { offset, timeout: 25_000 });
    const expected = Buffer.alloc(size); // posted native buffers start zeroed
    data.copy(expected, offset);
    expect(await report).toMatchObject({ bytes: data.length, ops: 1, sha256: sha256(expected) });
  }, 60_000);
});
