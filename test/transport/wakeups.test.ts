// No lost wake-up over shm: puts one at a time, ping-pong round trips and bursts that overfill
// a small ring, between two processes, in every progress mode (and thread progress with busy
// polling). A wake-up lost anywhere stalls a test until its bounded wait fails it.
import { Endpoint, type ProgressMode, type ShmOptions } from '../../src';
import { type Agent, seededBytes, sha256, startAgent, trackChildren } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { SANITIZED, SHM_TRANSPORTS, type Transport, withShm } from '../helpers/transports';

const KiB = 1 << 10;
const PUTS = 20_000;
const ROUND_TRIPS = 20_000;
// The smallest ring: it wraps often and fills up, so producers wait for room and are kicked.
const RING = 64 * KiB;
const TIMEOUT = SANITIZED ? 600_000 : 180_000;
const WAIT_MS = SANITIZED ? 300_000 : 60_000; // for one wait that covers a whole phase

type Case = [string, string, ProgressMode, Transport, ShmOptions];
const CASES: Case[] = SHM_TRANSPORTS.flatMap((t): Case[] => [
  [t.name, 'loop progress', 'loop', t, {}],
  [t.name, 'thread progress', 'thread', t, {}],
  [t.name, 'thread progress, busyPollUs 200', 'thread', t, { busyPollUs: 200 }],
]);

/** Consecutive slices of seeded bytes, one put each at its own offset, at most `window` in flight. */
async function putSlices(endpoint: Endpoint, target: string, vaddr: bigint, sizes: number[], seed: number, window: number): Promise<void> {
  const data = seededBytes(sizes.reduce((a, b) => a + b, 0), seed);
  const offsets: number[] = [];
  sizes.reduce((at, size) => (offsets.push(at), at + size), 0);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < sizes.length) {
      const i = next++;
      await endpoint.put(target, vaddr, data.subarray(offsets[i], offsets[i] + sizes[i]), { offset: offsets[i], timeout: WAIT_MS });
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, sizes.length) }, worker));
}

/** What a mailbox that took every slice (an ops epoch of sizes.length puts) must report. */
function expectedSlices(sizes: number[], seed: number): { ops: number; bytes: number; sha256: string } {
  const bytes = sizes.reduce((a, b) => a + b, 0);
  return { ops: sizes.length, bytes, sha256: sha256(seededBytes(bytes, seed)) };
}

// Mixed: every fourth put is larger than the eager limit (pulled, or chunked through the ring),
// the others go inline, up to 16 KiB each: 16 of them in flight overfill a 64 KiB ring.
const MIXED = Array.from({ length: 1024 }, (_, i) => (i % 4 === 0 ? 64 * KiB - 100 + (i % 200) : 1 + ((i * 7919) % (16 * KiB))));
const TINY = Array.from({ length: 4096 }, (_, i) => 1 + (i % 8));

describe.each(CASES)('no lost wake-up over %s (%s)', (_name, _mode, progress, transport, extra) => {
  const children = trackChildren('all');
  let local: Endpoint;
  let agent: Agent;
  let nextVaddr = VADDR;

  beforeAll(async () => {
    const options = { progress, ...withShm(transport, { ringBytes: RING, ...extra }) };
    local = await Endpoint.create({ nodeId: uniqueNodeId('wake'), listen: transport.listen('wake'), ...options });
    agent = await startAgent(children, `wake-${transport.name}-${progress}`, { listen: transport.listen('agent'), ...options });
    expect(await local.connect(agent.address, { timeout: 15_000 })).toBe(agent.nodeId);
    expect(local.peers()).toEqual([{ nodeId: agent.nodeId, provider: 'shm', detail: transport.detail }]);
  }, 60_000);

  afterAll(async () => {
    await local?.close();
  });

  /** A mailbox of the agent that completes once it took every slice. */
  async function agentSink(sizes: number[]): Promise<{ vaddr: bigint; report: Promise<Record<string, unknown>> }> {
    const vaddr = nextVaddr++;
    const v = vaddr.toString();
    await agent.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: sizes.length } });
    await agent.child.request({ cmd: 'post', vaddr: v, size: sizes.reduce((a, b) => a + b, 0) });
    return { vaddr, report: agent.child.request({ cmd: 'next', vaddr: v, timeout: WAIT_MS }, WAIT_MS + 10_000) };
  }

  /** A mailbox of the test process that completes once it took every slice. */
  function localSink(sizes: number[]): { vaddr: bigint; report: Promise<{ ops: number; bytes: number; sha256: string }> } {
    const vaddr = nextVaddr++;
    const mailbox = local.openMailbox(vaddr, { epoch: 'ops', threshold: BigInt(sizes.length) });
    mailbox.post(sizes.reduce((a, b) => a + b, 0));
    const report = mailbox.next({ timeout: WAIT_MS }).then((done) => ({ ops: done.ops, bytes: done.bytes, sha256: sha256(done.buffer) }));
    return { vaddr, report };
  }

  test(`${PUTS} small puts one at a time, each awaited, each way`, async () => {
    const sizes = Array.from({ length: PUTS }, () => 8);
    const there = await agentSink(sizes);
    await Promise.all([there.report, putSlices(local, agent.nodeId, there.vaddr, sizes, 11, 1)]);
    expect(await there.report).toMatchObject({ epoch: 1, ...expectedSlices(sizes, 11) });

    const back = localSink(sizes);
    const sent = agent.child.request(
      { cmd: 'putSlices', target: local.nodeId, vaddr: back.vaddr.toString(), sizes, seed: 12, window: 1, timeout: WAIT_MS },
      WAIT_MS + 10_000,
    );
    const [got] = await Promise.all([back.report, sent]);
    expect(got).toEqual(expectedSlices(sizes, 12));
  }, TIMEOUT);

  test(`${ROUND_TRIPS} ping-pong round trips`, async () => {
    const ping = nextVaddr++;
    const p = ping.toString();
    await agent.child.request({ cmd: 'open', vaddr: p, options: { epoch: 'ops', threshold: 1 } });
    // Two buffers each side: the next message may land before the last one's buffer is re-posted.
    for (let i = 0; i < 2; i++) await agent.child.request({ cmd: 'post', vaddr: p, size: 8 });
    const pong = local.openMailbox(nextVaddr++, { epoch: 'ops', threshold: 1n });
    for (let i = 0; i < 2; i++) pong.post(8);
    const echoed = agent.child.request(
      { cmd: 'pong', vaddr: p, count: ROUND_TRIPS, target: local.nodeId, replyVaddr: pong.vaddr.toString(), timeout: WAIT_MS },
      WAIT_MS + 10_000,
    );
    const message = Buffer.alloc(8);
    let wrong = 0;
    for (let i = 0; i < ROUND_TRIPS; i++) {
      message.writeUInt32LE(i, 0);
      message.writeUInt32LE(~i >>> 0, 4);
      const [done] = await Promise.all([pong.next({ timeout: WAIT_MS }), local.put(agent.nodeId, ping, message, { timeout: WAIT_MS })]);
      const view = Buffer.from(done.buffer.buffer, done.buffer.byteOffset, 8);
      if (done.bytes !== 8 || view.readUInt32LE(0) !== i || view.readUInt32LE(4) !== ~i >>> 0) wrong++;
      pong.post(done.buffer);
    }
    expect(wrong).toBe(0);
    expect(await echoed).toMatchObject({ echoed: ROUND_TRIPS });
    expect(pong.epoch).toBe(ROUND_TRIPS);
  }, TIMEOUT);

  test(`bursts that overfill a ${RING / KiB} KiB ring, both ways at once: every put placed exactly once`, async () => {
    const [mixedThere, tinyThere] = [await agentSink(MIXED), await agentSink(TINY)];
    const [mixedBack, tinyBack] = [localSink(MIXED), localSink(TINY)];
    const send = (vaddr: bigint, sizes: number[], seed: number, window: number) =>
      agent.child.request(
        { cmd: 'putSlices', target: local.nodeId, vaddr: vaddr.toString(), sizes, seed, window, timeout: WAIT_MS },
        WAIT_MS + 10_000,
      );
    const results = await Promise.all([
      mixedThere.report,
      tinyThere.report,
      mixedBack.report,
      tinyBack.report,
      putSlices(local, agent.nodeId, mixedThere.vaddr, MIXED, 21, 16),
      putSlices(local, agent.nodeId, tinyThere.vaddr, TINY, 22, 256),
      send(mixedBack.vaddr, MIXED, 23, 16),
      send(tinyBack.vaddr, TINY, 24, 256),
    ]);
    expect(results[0]).toMatchObject({ epoch: 1, ...expectedSlices(MIXED, 21) });
    expect(results[1]).toMatchObject({ epoch: 1, ...expectedSlices(TINY, 22) });
    expect(results[2]).toEqual(expectedSlices(MIXED, 23));
    expect(results[3]).toEqual(expectedSlices(TINY, 24));
  }, TIMEOUT);
});
