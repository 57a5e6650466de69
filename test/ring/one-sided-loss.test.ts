// Losses that only one side sees. A directory can report a live member gone to one member and
// not to another (a Redis restarted empty, a lease that lapsed while its owner was stopped), and
// a member can come back into a generation its peers still run. Neither may leave a member
// waiting in a generation nobody else runs: every member's ring fails typed, and re-forms.
import { type DirectoryEvent, Endpoint, MemoryDirectory, type NodeRecord, type Ring } from '../../src';
import { type EventStream } from '../../src/directory/event-stream';
import { expectRejects } from '../helpers/errors';
import { WAIT, failures, forward, quiet, sink, source, trackRings } from '../helpers/ring';

/** The process directory, plus leave events for live nodes that only this node's watchers see. */
class OneSidedDirectory extends MemoryDirectory {
  private readonly watchers: EventStream<DirectoryEvent>[] = [];

  override watch(options?: { signal?: AbortSignal }): AsyncIterableIterator<DirectoryEvent> {
    const stream = super.watch(options) as EventStream<DirectoryEvent>;
    this.watchers.push(stream);
    return stream;
  }

  reportGone(node: NodeRecord): void {
    for (const w of this.watchers) w.push({ type: 'leave', node });
  }
}

const views = new Map<string, OneSidedDirectory>();
const rings = trackRings((progress, nodeId) => {
  const directory = new OneSidedDirectory();
  views.set(nodeId, directory);
  return Endpoint.create({ nodeId, progress, directory });
});
afterEach(() => views.clear());

async function reportGone(to: Ring, gone: Ring): Promise<void> {
  const record = await to.endpoint.directory.resolveNode(gone.endpoint.nodeId);
  views.get(to.endpoint.nodeId)!.reportGone(record!);
}

/** 200 frames each way from rank 0 around the ring: every one back, in order, byte-exact. */
async function expectWorking(ring: Ring[]): Promise<void> {
  const [r0, ...others] = ring;
  const sinks = Promise.all([sink(r0, 'next', 200, 48), sink(r0, 'prev', 200, 48)]);
  await Promise.all([source(r0, 'next', 200, 48), source(r0, 'prev', 200, 48), ...others.flatMap((r) => [forward(r, 'next', 200), forward(r, 'prev', 200)]), sinks]);
  for (const s of await sinks) expect(s).toEqual({ received: 200, bad: 0, firstBad: undefined });
}

describe('a live member reported gone by the directory to one member only', () => {
  test.each([2, 3])('ring of %i: the member reported gone fails too, typed, and every member re-forms with it', async (size) => {
    const ring = await rings.ringOf(size, 'loop');
    const [r0, r1] = ring;
    const watched = ring.map((r) => failures(r));
    // r1 waits for a frame that will never come: before, nobody told it its generation was over.
    const waiting = quiet(r1.recvPrev({ timeout: WAIT }));

    await reportGone(r0, r1);

    await expectRejects(waiting, 'ERR_RVMA_PEER_LOST', new RegExp(`rank 0 \\(node "${r0.endpoint.nodeId}"\\) declared this member lost`));
    for (const w of watched) expect((await w.first).lost).toBe(r1.endpoint.nodeId);
    for (const r of ring) await expectRejects(r.recvNext({ timeout: WAIT }), 'ERR_RVMA_PEER_LOST');

    // The others count it out; it comes back as a newcomer into the rank the size leaves free.
    await Promise.all(ring.map((r) => r.reform({ size, timeout: WAIT })));
    for (const r of ring) expect([r.generation, r.size, r.failure]).toEqual([1, size, undefined]);
    expect(r1.rank).toBe(size - 1);
    await expectWorking([...ring].sort((a, b) => a.rank - b.rank));
    for (const w of watched) expect(w.events).toHaveLength(1);
  }, 4 * WAIT);
});

describe('a member that comes back into a generation the others still run', () => {
  test('the others see another instance of it, fail typed, and tell both instances', async () => {
    const [r0, r1] = await rings.ringOf(2, 'loop');
    const f0 = failures(r0);
    const f1 = failures(r1);
    // r0's endpoint joins again: the directory still holds its rank of generation 0, so the
    // second ring takes that rank with mailboxes of its own, which r1 never heard of.
    const again = await rings.join(r0.endpoint, { group: r0.group, size: 2, timeout: WAIT });
    const fAgain = failures(again);
    expect(again.generation).toBe(0);

    const anew = new RegExp(`node "${r0.endpoint.nodeId}"\\) was lost: it joined generation 0 anew`);
    expect((await f1.first).error.message).toMatch(anew);
    await expectRejects(r1.recvPrev({ timeout: WAIT }), 'ERR_RVMA_PEER_LOST', anew);
    // Both instances hear it from r1: neither waits for credits or frames that never come.
    const declared = new RegExp(`rank 1 \\(node "${r1.endpoint.nodeId}"\\) declared this member lost`);
    for (const f of [f0, fAgain]) expect((await f.first).error.message).toMatch(declared);
    await expectRejects(again.sendNext(Uint8Array.of(1), { timeout: WAIT }), 'ERR_RVMA_PEER_LOST', declared);
  }, 4 * WAIT);
});
