// Many processes appending into one mailbox, over every transport: 16 sender processes x 2,000
// append puts of self-describing records into an ops-counted mailbox of the test process.
// Every record must land exactly once, intact, and the epoch must count exactly every put.
import { Endpoint } from '../../src';
import { startAgent, trackChildren } from '../helpers/children';
import { parseRecords, recordLength } from '../helpers/data';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { SANITIZED, transportCases } from '../helpers/transports';

const SENDERS = 16;
// 17 processes under ASan (npm run test:asan) on a 2-core machine need far longer.
const TIMEOUT = SANITIZED ? 240_000 : 120_000;
const PUTS_PER_SENDER = 2000;

describe.each(transportCases())('many-to-one appends over %s (%s progress)', (_name, progress, transport) => {
  const children = trackChildren('each');
  let endpoint: Endpoint | undefined;

  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  test(`${SENDERS} processes x ${PUTS_PER_SENDER} appends: every record exactly once, counts exact`, async () => {
    endpoint = await Endpoint.create({ nodeId: uniqueNodeId('sink'), progress, listen: transport.listen('sink'), ...transport.options });
    const total = SENDERS * PUTS_PER_SENDER;
    let totalBytes = 0;
    for (let s = 0; s < SENDERS; s++) for (let q = 0; q < PUTS_PER_SENDER; q++) totalBytes += recordLength(s, q);
    // The buffer is exactly as large as all records together: one lost, duplicated or
    // misplaced append shows up as a wrong count, an out-of-bounds refusal or a parse error.
    const mailbox = endpoint.openMailbox(VADDR, { epoch: 'ops', threshold: total });
    const buffer = mailbox.post(totalBytes);

    const agents = await Promise.all(
      Array.from({ length: SENDERS }, (_, s) => startAgent(children, `sender-${s}`, { progress, ...transport.options })),
    );
    // Connect everyone first, then start together, so the appends really interleave.
    await Promise.all(agents.map((a) => a.child.request({ cmd: 'connect', address: endpoint!.address }, 20_000)));
    await Promise.all(
      agents.map((a, s) =>
        a.child.request(
          {
            cmd: 'appendRecords',
            target: endpoint!.nodeId,
            vaddr: VADDR.toString(),
            sender: s,
            count: PUTS_PER_SENDER,
            window: 32,
            timeout: 30_000,
          },
          60_000,
        ),
      ),
    );

    const done = await mailbox.next({ timeout: 10_000 });
    expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, ops: total, bytes: totalBytes });
    expect(done.buffer).toBe(buffer);
    const parsed = parseRecords(done.buffer, totalBytes);
    expect(parsed.errors).toEqual([]);
    expect(parsed.end).toBe(totalBytes);
    expect(parsed.keys).toHaveLength(total);
    expect(new Set(parsed.keys).size).toBe(total);
    const perSender = new Map<number, number>();
    for (const key of parsed.keys) {
      const [s, q] = key.split(':').map(Number);
      expect(q).toBeLessThan(PUTS_PER_SENDER);
      perSender.set(s, (perSender.get(s) ?? 0) + 1);
    }
    expect([...perSender.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: SENDERS }, (_, s) => s));
    for (const count of perSender.values()) expect(count).toBe(PUTS_PER_SENDER);
    // Every sender's puts came in over its connection, so the receiver knows them all by now (a
    // sender's connect may resolve before the receiver has handled that sender's hello).
    const expectedPeers = agents.map((a) => ({ nodeId: a.nodeId, provider: transport.provider, detail: transport.detail }));
    const byNode = (a: { nodeId: string }, b: { nodeId: string }) => a.nodeId.localeCompare(b.nodeId);
    expect(endpoint.peers().sort(byNode)).toEqual(expectedPeers.sort(byNode));
  }, TIMEOUT);
});
