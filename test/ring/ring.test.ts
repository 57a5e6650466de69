// Rings of endpoints in one process (loopback provider, the process MemoryDirectory): join and
// close here; the data path (ordered exactly-once frames, gathered frames, credits, control
// records, around(), failure and reform) in test/helpers/ring-suite.ts, which test/rdma runs
// over verbs too.
import { Endpoint, Ring, type RingControl } from '../../src';
import { uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { WAIT, trackRings } from '../helpers/ring';
import { ringSuite } from '../helpers/ring-suite';

const rings = trackRings((progress, nodeId) => Endpoint.create({ nodeId, progress }));
const { endpoint, join, ringOf } = rings;

describe('Ring.join', () => {
  test('three members joining at once take ranks 0, 1, 2 and agree on neighbours and members', async () => {
    const group = uniqueNodeId('g');
    const eps = await Promise.all([0, 1, 2].map(() => endpoint()));
    const joined = await Promise.all(eps.map((e) => join(e, { group, size: 3, timeout: WAIT })));
    expect(joined.map((r) => r.rank).sort()).toEqual([0, 1, 2]);
    const members = joined[0].members;
    expect(new Set(members)).toEqual(new Set(eps.map((e) => e.nodeId)));
    for (const ring of joined) {
      expect(ring.group).toBe(group);
      expect(ring.size).toBe(3);
      expect(ring.generation).toBe(0);
      expect(ring.members).toEqual(members);
      expect(ring.members[ring.rank]).toBe(ring.endpoint.nodeId);
      expect(ring.next).toBe(members[(ring.rank + 1) % 3]);
      expect(ring.prev).toBe(members[(ring.rank + 2) % 3]);
      expect(ring.failure).toBeUndefined();
      expect(ring.closed).toBe(false);
    }
  });

  test('a member that asks for a rank gets it; one without a size reads the size another gave', async () => {
    const group = uniqueNodeId('g');
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => endpoint()));
    const [ra, rb, rc] = await Promise.all([
      join(a, { group, rank: 2, timeout: WAIT }),
      join(b, { group, size: 3, timeout: WAIT }),
      join(c, { group, timeout: WAIT }),
    ]);
    expect(ra.rank).toBe(2);
    expect([ra.size, rb.size, rc.size]).toEqual([3, 3, 3]);
    expect([rb.rank, rc.rank].sort()).toEqual([0, 1]);
    expect(rb.members).toEqual(ra.members);
    expect(rc.members[2]).toBe(a.nodeId);
  });

  test('a size other than the group\'s rejects ERR_RVMA_INVALID_ARGUMENT naming both sizes', async () => {
    const group = uniqueNodeId('g');
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => endpoint()));
    await Promise.all([join(a, { group, size: 2, timeout: WAIT }), join(b, { group, timeout: WAIT })]);
    const refused = Ring.join(c, { group, size: 3, timeout: WAIT });
    await expectRejects(refused, 'ERR_RVMA_INVALID_ARGUMENT', new RegExp(`group "${group}" has 2 ranks, not 3`));
    await expectRejects(Ring.join(c, { group, rank: 5, timeout: WAIT }), 'ERR_RVMA_INVALID_ARGUMENT', /rank 5 is outside group .* of 2 ranks/);
  });

  test('an incomplete ring times out with ERR_RVMA_TIMEOUT; an aborted join rejects ERR_RVMA_ABORTED', async () => {
    const e = await endpoint();
    const group = uniqueNodeId('g');
    const alone = Ring.join(e, { group, size: 3, timeout: 300 });
    await expectRejects(alone, 'ERR_RVMA_TIMEOUT', new RegExp(`group "${group}" timed out.*waiting for rank 1, 2 of 3`));

    const controller = new AbortController();
    const joining = Ring.join(e, { group: uniqueNodeId('g'), size: 2, timeout: WAIT, signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expectRejects(joining, 'ERR_RVMA_ABORTED', /aborted/);
    await expectRejects(Ring.join(e, { group: uniqueNodeId('g'), size: 2, timeout: WAIT, signal: AbortSignal.abort() }), 'ERR_RVMA_ABORTED');

    // The failed joins left nothing behind: the same endpoint joins a ring afterwards.
    const other = await endpoint();
    const g2 = uniqueNodeId('g');
    const [r1, r2] = await Promise.all([join(e, { group: g2, size: 2, timeout: WAIT }), join(other, { group: g2, size: 2, timeout: WAIT })]);
    expect([r1.rank, r2.rank].sort()).toEqual([0, 1]);
  });

  test('a timed-out join gives its rank back: a later ring of the group forms', async () => {
    const group = uniqueNodeId('g');
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => endpoint()));
    await expectRejects(Ring.join(a, { group, size: 2, rank: 0, timeout: 200 }), 'ERR_RVMA_TIMEOUT');
    const [rb, rc] = await Promise.all([join(b, { group, size: 2, rank: 0, timeout: WAIT }), join(c, { group, timeout: WAIT })]);
    expect([rb.rank, rc.rank]).toEqual([0, 1]);
  });

  test('bad options reject ERR_RVMA_INVALID_ARGUMENT naming the option', async () => {
    const e = await endpoint();
    const g = uniqueNodeId('g');
    const cases: [unknown, RegExp][] = [
      [undefined, /group/],
      [{}, /group/],
      [{ group: '' }, /group/],
      [{ group: 7 }, /group/],
      [{ group: g, size: 2, colour: 'red' }, /unknown option "colour"/],
      [{ group: 'a/b', size: 2 }, /group must be .*\[A-Za-z0-9._:-\]/],
      [{ group: 'a b', size: 2 }, /group must be/],
      [{ group: 'x'.repeat(201), size: 2 }, /group must be 1 to 200/],
      [{ group: g, size: 3, rank: 3 }, /rank must be an integer in \[0, 2\]/],
      [{ group: g, size: 3, rank: -1 }, /rank/],
      [{ group: g, size: 3, rank: 1.5 }, /rank/],
      [{ group: g, size: 0 }, /size must be/],
      [{ group: g, size: 2, slots: 0 }, /slots must be an integer in \[1, 4096\]/],
      [{ group: g, size: 2, frameBytes: 0 }, /frameBytes/],
      [{ group: g, size: 2, controlBytes: 10 }, /controlBytes/],
      [{ group: g, size: 2, timeout: -1 }, /timeout/],
      [{ group: g, size: 2, signal: {} }, /signal/],
    ];
    for (const [options, message] of cases) {
      const error = await expectRejects(Ring.join(e, options as never), 'ERR_RVMA_INVALID_ARGUMENT', message);
      expect(error.message).toMatch(/^Ring\.join: /);
    }
    await expectRejects(Ring.join({} as never, { group: g, size: 1 }), 'ERR_RVMA_INVALID_ARGUMENT', /endpoint must be an Endpoint/);
  });

  test('a closed endpoint cannot join: ERR_RVMA_CLOSED', async () => {
    const e = await endpoint();
    await e.close();
    await expectRejects(Ring.join(e, { group: uniqueNodeId('g'), size: 1 }), 'ERR_RVMA_CLOSED');
  });
});

ringSuite('a ring in one process', rings, { frames: 10_000, longTestMs: 60_000 });

describe('Ring.close', () => {
  test('after close every op rejects ERR_RVMA_CLOSED, pending ones included; close is idempotent', async () => {
    const [r0, r1] = await ringOf(2, 'loop');
    const pendingRecv = r0.recvPrev({ timeout: WAIT });
    const pendingControl = r0.control({ timeout: WAIT });
    pendingRecv.catch(() => undefined);
    pendingControl.catch(() => undefined);
    const closing = r0.close();
    const again = r0.close();
    await Promise.all([closing, again]);
    await r0.close();
    expect(r0.closed).toBe(true);
    await expectRejects(pendingRecv, 'ERR_RVMA_CLOSED');
    await expectRejects(pendingControl, 'ERR_RVMA_CLOSED');
    const data = Uint8Array.of(1);
    const record: RingControl = { type: 'CONTROL', body: 1 };
    await expectRejects(r0.sendNext(data), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.sendPrev(data), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.recvPrev(), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.recvNext(), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.control(), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.sendControl(record), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.around(record), 'ERR_RVMA_CLOSED');
    await expectRejects(r0.reform({ timeout: 100 }), 'ERR_RVMA_CLOSED');
    expect(r0.pollControl()).toBeUndefined();
    expect(r0.failure?.code).toBe('ERR_RVMA_CLOSED');
    expect(() => r0.rank).toThrow(/closed/);
    // The other member lost it.
    await expectRejects(r1.recvPrev({ timeout: WAIT }), 'ERR_RVMA_PEER_LOST', new RegExp(r0.endpoint.nodeId));
    await r1.close();
    await r1.close();
  });
});
