// Gathered puts ([head, data]) land as one payload, byte for byte, on every transport: inline,
// large (shm pulls or chunks), and split over tcp's stripes (each part sends its slices of head
// and data in place).
import { randomBytes } from 'node:crypto';
import { Endpoint } from '../../src';
import { type Agent, sha256, startAgent, trackChildren } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { transportCases } from '../helpers/transports';

const KiB = 1 << 10;
const MiB = 1 << 20;
// [head, data] lengths: a ring frame, either part empty, above shm's eager limit, and above
// tcp's stripeMinBytes (1 MiB) so that it is split over the two stripes.
const SHAPES: [number, number][] = [
  [8, 16 * KiB],
  [0, 4 * KiB],
  [4 * KiB, 0],
  [24, 64 * KiB],
  [100, 64 * KiB],
  [3, 5 * MiB],
];
// Placed at an offset (appends are never split), above stripeMinBytes: a small head in the first
// part; a head longer than a part (the first part all head, the second head and data); no data.
const SPLIT_SHAPES: [number, number][] = [
  [8, 2 * MiB],
  [3 * MiB, 2 * MiB],
  [2 * MiB, 0],
];

describe.each(transportCases())('gathered puts across processes over %s (%s progress)', (_name, progress, transport) => {
  const children = trackChildren('all');
  let endpoint: Endpoint;
  let agent: Agent;

  beforeAll(async () => {
    const options = { progress, ...transport.options, ...(transport.provider === 'tcp' ? { tcp: { stripes: 2 } } : {}) };
    endpoint = await Endpoint.create({ nodeId: uniqueNodeId('gather'), listen: transport.listen('gather'), ...options });
    agent = await startAgent(children, `gather-${transport.name}-${progress}`, { listen: transport.listen('agent'), ...options });
    await endpoint.connect(agent.address, { timeout: 10_000 });
  }, 60_000);

  afterAll(async () => {
    await endpoint?.close();
  });

  async function gatheredPut(headLen: number, dataLen: number, append: boolean): Promise<void> {
    const vaddr = VADDR + BigInt(headLen * 7 + dataLen) + (append ? 0n : 1n);
    const v = vaddr.toString();
    const size = headLen + dataLen;
    // ops epochs: a 0-byte put would never reach a bytes threshold of 0.
    await agent.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops' } });
    await agent.child.request({ cmd: 'post', vaddr: v, size: Math.max(size, 1) });
    const head = randomBytes(headLen);
    const data = new Float32Array(randomBytes(dataLen).buffer);
    const report = agent.child.request({ cmd: 'next', vaddr: v, hashBytes: size, timeout: 20_000 }, 30_000);
    const placement = append ? { append: true } : { offset: 0 };
    const [child] = await Promise.all([report, endpoint.put(agent.nodeId, vaddr, [head, data], { ...placement, timeout: 20_000 })]);
    expect(child).toMatchObject({ epoch: 1, bytes: size, ops: 1 });
    expect(child.sha256).toBe(sha256(Buffer.concat([head, Buffer.from(data.buffer)])));
    await agent.child.request({ cmd: 'closeMailbox', vaddr: v });
  }

  test.each(SHAPES)('[%i, %i] bytes arrive as one put', (headLen, dataLen) => gatheredPut(headLen, dataLen, true), 40_000);

  test.each(SPLIT_SHAPES)('[%i, %i] bytes at an offset arrive as one put', (headLen, dataLen) => gatheredPut(headLen, dataLen, false), 40_000);
});

describe('gathered puts in one process (loopback)', () => {
  test('head and data land back to back, after earlier appends', async () => {
    const a = await Endpoint.create({ nodeId: uniqueNodeId('gather-a') });
    const b = await Endpoint.create({ nodeId: uniqueNodeId('gather-b') });
    try {
      const mailbox = b.openMailbox(VADDR, { epoch: 'ops', threshold: 2 });
      const buffer = mailbox.post(64);
      await a.put(b, VADDR, Uint8Array.of(1, 2), { append: true });
      await a.put(b, VADDR, [Uint8Array.of(3, 4, 5), Uint16Array.of(0x0706)], { append: true });
      const done = await mailbox.next({ timeout: 5000 });
      expect(done).toMatchObject({ bytes: 7, ops: 2 });
      expect([...buffer.subarray(0, 8)]).toEqual([1, 2, 3, 4, 5, 6, 7, 0]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a malformed gather is refused with a typed error', async () => {
    const a = await Endpoint.create({ nodeId: uniqueNodeId('gather-bad') });
    try {
      const bad: unknown[] = [[Uint8Array.of(1)], [Uint8Array.of(1), Uint8Array.of(2), Uint8Array.of(3)], [Uint8Array.of(1), 'x']];
      for (const data of bad) {
        await expectRejects(a.put(a, VADDR, data as never), 'ERR_RVMA_INVALID_ARGUMENT', /gathered put|data\[1\]/);
      }
    } finally {
      await a.close();
    }
  });
});
