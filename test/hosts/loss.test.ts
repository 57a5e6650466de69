// Many-to-one across a lossy wire: a sink on one host, a sender on each of three others, every
// sender appending counted 8-byte records into one mailbox of the sink while nftables drops 1%
// or 5% of the packets into and out of the sink's host. TCP repairs the losses: every record
// lands exactly once, every counter counts every put, nothing fails.
import { RECORD_BYTES, RecordTally } from '../helpers/counted';
import { trackChildren } from '../helpers/children';
import { agentOn, describeHosts } from './hosts';

jest.setTimeout(180_000);
const VADDR = '73728';
const SENDERS = 3;
// Enough traffic that random loss surely hits it: 3,000 puts a sender crossed in 400 to 500
// packets, about 4 of them dropped at 1%, and none in about one case of 50; 30,000 lose 15 to 35.
const PUTS_PER_SENDER = 30_000;

describeHosts('many-to-one appends over a lossy wire', 4, (bed) => {
  const children = trackChildren('each');
  afterEach(() => bed().loss(bed().hosts[0], 0));

  const cases = [1, 5].flatMap((percent) => (['loop', 'thread'] as const).map((progress) => [percent, progress] as const));
  test.each(cases)('%i%% loss at the sink, %s progress: every record exactly once, counters exact', async (percent, progress) => {
    const [sinkHost, ...senderHosts] = bed().hosts;
    const tcp = { keepaliveMs: 500, peerTimeoutMs: 10_000 };
    const sink = await agentOn(children, bed(), sinkHost, 'sink', { progress, provider: 'tcp', listen: `tcp://${sinkHost.address}:0`, tcp });
    const total = SENDERS * PUTS_PER_SENDER;
    await sink.child.request({ cmd: 'open', vaddr: VADDR, options: { epoch: 'ops', threshold: total } });
    await sink.child.request({ cmd: 'post', vaddr: VADDR, size: total * RECORD_BYTES });
    const senders = await Promise.all(senderHosts.map((h, s) => agentOn(children, bed(), h, `sender${s}`, { progress, provider: 'tcp', tcp })));
    await Promise.all(senders.map((a) => a.child.request({ cmd: 'connect', address: sink.address }, 30_000)));

    bed().loss(sinkHost, percent);
    const replies = await Promise.all(
      senders.map((a, s) =>
        a.child.request({ cmd: 'countedRecords', target: sink.address, vaddr: VADDR, sender: s, count: PUTS_PER_SENDER, window: 256, timeout: 120_000 }, 150_000),
      ),
    );
    const dropped = bed().dropped(sinkHost);
    bed().loss(sinkHost, 0);
    expect(dropped).toBeGreaterThan(0);
    for (const r of replies) expect([r.issued, r.completed, r.failed, r.codes]).toEqual([PUTS_PER_SENDER, PUTS_PER_SENDER, 0, {}]);
    const done = await sink.child.request({ cmd: 'next', vaddr: VADDR });
    expect([done.ops, done.bytes]).toEqual([total, total * RECORD_BYTES]);
    const { hex } = (await sink.child.request({ cmd: 'read', vaddr: VADDR, start: 0, end: total * RECORD_BYTES })) as unknown as { hex: string };
    const tally = new RecordTally(SENDERS, PUTS_PER_SENDER);
    tally.add(Buffer.from(hex, 'hex'), total * RECORD_BYTES);
    expect([tally.total, tally.duplicates, tally.corrupt]).toEqual([total, 0, 0]);
    expect(Array.from({ length: SENDERS }, (_, s) => tally.missing(s))).toEqual([0, 0, 0]);
  });
});
