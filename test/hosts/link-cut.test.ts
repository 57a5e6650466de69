// A host's cable pulled and plugged back in (its switch port down, then up) while it streams
// counted appends to a sink on another host over tcp. Back within tcp.reconnectMs: the puts kept
// for the reconnect go again, and every record lands exactly once with no failure. Cut for
// good: the puts in flight reject with ERR_RVMA_PEER_LOST within peerTimeoutMs + reconnectMs
// (and a margin), and none was placed twice. The sender stops at its first failure.
import { RECORD_BYTES, RecordTally } from '../helpers/counted';
import { trackChildren } from '../helpers/children';
import { agentOn, describeHosts } from './hosts';

jest.setTimeout(120_000);
const VADDR = '73728';
const PUTS = 300_000;
/** Silence for longer than peerTimeoutMs breaks a connection; a new one must come within reconnectMs. */
const TCP = { keepaliveMs: 200, peerTimeoutMs: 1000, reconnectMs: 3000, connectTimeoutMs: 1000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
interface Counted {
  issued: number;
  completed: number;
  failed: number;
  codes: Record<string, number>;
}

describeHosts('a link cut while puts stream', 2, (bed) => {
  const children = trackChildren('each');
  afterEach(() => bed().restore(bed().hosts[1]));

  async function stream(progress: 'loop' | 'thread') {
    const [sinkHost, senderHost] = bed().hosts;
    const sink = await agentOn(children, bed(), sinkHost, 'sink', { progress, provider: 'tcp', listen: `tcp://${sinkHost.address}:0`, tcp: TCP });
    await sink.child.request({ cmd: 'open', vaddr: VADDR, options: { epoch: 'ops', threshold: PUTS } });
    await sink.child.request({ cmd: 'post', vaddr: VADDR, size: PUTS * RECORD_BYTES });
    const sender = await agentOn(children, bed(), senderHost, 'sender', { progress, provider: 'tcp', listen: `tcp://${senderHost.address}:0`, tcp: TCP });
    await sender.child.request({ cmd: 'connect', address: sink.address });
    // A small window: the stream lasts long enough to be cut in its middle.
    const reply = sender.child.request(
      { cmd: 'countedRecords', target: sink.address, vaddr: VADDR, sender: 0, count: PUTS, window: 8, stopOnFailure: true, timeout: 60_000 },
      90_000,
    );
    const tally = async (): Promise<RecordTally> => {
      const { hex } = (await sink.child.request({ cmd: 'read', vaddr: VADDR, start: 0, end: PUTS * RECORD_BYTES })) as unknown as { hex: string };
      const t = new RecordTally(1, PUTS);
      // Slots never written read as zeros: count them apart from corrupt records.
      const bytes = Buffer.from(hex, 'hex');
      let empty = 0;
      for (let at = 0; at < bytes.length; at += RECORD_BYTES) if (bytes.readBigUInt64LE(at) === 0n) empty++;
      t.add(bytes, bytes.length);
      t.corrupt -= empty;
      return t;
    };
    let replied = false;
    void reply.then(
      () => (replied = true),
      () => (replied = true),
    );
    /** Waits until records arrive at the sink, and checks the stream is still going: then it may be cut. */
    const midway = async (): Promise<void> => {
      for (const end = Date.now() + 20_000; Date.now() < end; await sleep(10)) {
        const { end: written } = (await sink.child.request({ cmd: 'extent', vaddr: VADDR })) as unknown as { end: number };
        if (written > 0) break;
      }
      expect(replied).toBe(false);
    };
    return { sink, sender, reply, tally, senderHost, midway };
  }

  test.each(['loop', 'thread'] as const)('back within reconnectMs (%s progress): every record exactly once, nothing failed', async (progress) => {
    const { reply, tally, senderHost, sink, midway } = await stream(progress);
    await midway();
    bed().cut(senderHost);
    await sleep(2000); // the connection breaks after peerTimeoutMs (1 s); 1 s of the 3 s to reconnect pass
    bed().restore(senderHost);
    const r = (await reply) as unknown as Counted;
    expect([r.issued, r.completed, r.failed, r.codes]).toEqual([PUTS, PUTS, 0, {}]);
    expect(await sink.child.request({ cmd: 'next', vaddr: VADDR })).toMatchObject({ ops: PUTS, bytes: PUTS * RECORD_BYTES });
    const t = await tally();
    expect([t.total, t.duplicates, t.corrupt, t.missing(0)]).toEqual([PUTS, 0, 0, 0]);
  });

  test.each(['loop', 'thread'] as const)('cut for good (%s progress): ERR_RVMA_PEER_LOST within the bound, nothing placed twice', async (progress) => {
    const { reply, tally, senderHost, midway } = await stream(progress);
    await midway();
    const cutAt = Date.now();
    bed().cut(senderHost);
    const r = (await reply) as unknown as Counted;
    const took = Date.now() - cutAt;
    // peerTimeoutMs + reconnectMs, with room for a loaded machine; a hang would time the test out.
    expect(took).toBeLessThan(TCP.peerTimeoutMs + TCP.reconnectMs + 10_000);
    expect(r.failed).toBeGreaterThan(0);
    expect(r.completed + r.failed).toBe(r.issued);
    // The puts in flight when the connection was given up: lost with it. Any made after (the
    // stream stops at its first failure) find no peer to dial.
    expect(r.codes.ERR_RVMA_PEER_LOST).toBeGreaterThan(0);
    for (const code of Object.keys(r.codes)) expect(['ERR_RVMA_PEER_LOST', 'ERR_RVMA_NO_PEER']).toContain(code);
    bed().restore(senderHost);
    const t = await tally();
    expect([t.duplicates, t.corrupt]).toEqual([0, 0]);
    // Every put the counter saw completed was placed; a put placed but unanswered counts as failed.
    expect(t.total).toBeGreaterThanOrEqual(r.completed);
    expect(t.total).toBeLessThanOrEqual(r.issued);
  });
});
