// A ring member's credits mailbox against records that are not its neighbour's credits: from
// another node (refused once the ring is complete), from another instance of the neighbour,
// malformed, or so many before the ring is complete that the neighbour's own would find no room. None of them lets a send through;
// the neighbour's credits still come (it sends them again when it hears that this member's ring
// is complete).
import { Endpoint, type Ring } from '../../src';
import { uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { WAIT, creditRecord, trackRings } from '../helpers/ring';

const { endpoint, join } = trackRings((progress, nodeId) => Endpoint.create({ nodeId, progress }));
const SLOTS = 2;

/** The base vaddr rank `rank` of generation 0 bound, once it is bound. */
async function baseOf(e: Endpoint, group: string, rank: number): Promise<bigint> {
  for (const end = Date.now() + WAIT; Date.now() < end; await new Promise((r) => setTimeout(r, 5))) {
    const bound = await e.directory.resolveName(`rvma.ring/${group}/0/rank/${rank}`);
    if (bound !== undefined) return bound.vaddr;
  }
  throw new Error(`rank ${rank} of ${group} was never bound`);
}

/** Sends until one times out waiting for a credit: how many went (at most `limit`). */
async function sendsUntilWait(ring: Ring, limit: number): Promise<number> {
  for (let n = 0; n < limit; n++) {
    // A send that times out waiting takes no sequence number.
    const went = await ring.sendNext(Uint8Array.of(n), { timeout: 300 }).then(
      () => true,
      () => false,
    );
    if (!went) return n;
  }
  return limit;
}

describe('ring credits', () => {
  test('records from another node, another instance of the neighbour, or malformed let no send through', async () => {
    const group = uniqueNodeId('g');
    const [e0, e1, hostile] = await Promise.all([endpoint(), endpoint(), endpoint()]);
    const [r0, r1] = await Promise.all([join(e0, { group, size: 2, rank: 0, slots: SLOTS, timeout: WAIT }), join(e1, { group, size: 2, rank: 1, slots: SLOTS, timeout: WAIT })]);
    const [base0, base1] = await Promise.all([baseOf(e0, group, 0), baseOf(e0, group, 1)]);
    const credits0 = base0 + 3n;
    // In r1's name from another node (refused: only the neighbours may put there once the ring
    // is complete), from r1's node naming other mailboxes, and malformed.
    await expectRejects(hostile.put(e0.nodeId, credits0, creditRecord(0, 1000, 1 << 20, base1)), 'ERR_RVMA_FORBIDDEN');
    await e1.put(e0.nodeId, credits0, creditRecord(0, 1000, 1 << 20, base1 + 4n));
    await e1.put(e0.nodeId, credits0, creditRecord(0, 1000, 1 << 20, base1).subarray(0, 23));
    const bad = creditRecord(0, 1000, 1 << 20, base1);
    bad[2] = 9; // version
    await e1.put(e0.nodeId, credits0, bad);
    // r1 granted SLOTS: that many go, the next waits (and times out: nothing frees a buffer).
    expect(await sendsUntilWait(r0, SLOTS + 2)).toBe(SLOTS);
    // r1 takes its frames: the real credits let the waiting send through.
    for (let i = 0; i < SLOTS; i++) (await r1.recvPrev({ timeout: WAIT })).release();
    await r0.sendNext(Uint8Array.of(7), { timeout: WAIT });
    const f = await r1.recvPrev({ timeout: WAIT });
    expect(f.data[0]).toBe(7);
    expect([r0.failure, r1.failure]).toEqual([undefined, undefined]);
  });

  test('credits crowded out before the ring is complete come again once it is', async () => {
    const group = uniqueNodeId('g');
    const [e0, e1, hostile] = await Promise.all([endpoint(), endpoint(), endpoint()]);
    const first = join(e0, { group, size: 2, rank: 0, slots: SLOTS, timeout: WAIT });
    const credits0 = (await baseOf(e0, group, 0)) + 3n;
    // Before r0's ring is complete, records of 16 other instances per direction fill what it
    // keeps for its neighbours (8 per direction).
    for (let i = 0; i < 16; i++) {
      for (const dir of [0, 1] as const) await hostile.put(e0.nodeId, credits0, creditRecord(dir, 1, 1 << 20, 0x10000n + BigInt(i)));
    }
    // Its frame mailboxes take nothing before it grants credits: a frame there now is refused.
    const frame = new Uint8Array(32);
    frame.set([0x46, 0x52, 1], 0);
    for (const at of [1n, 2n]) await expectRejects(hostile.put(e0.nodeId, credits0 - 3n + at, frame, { append: true }), 'ERR_RVMA_FORBIDDEN');
    const second = join(e1, { group, size: 2, rank: 1, slots: SLOTS, timeout: WAIT });
    const [r0, r1] = await Promise.all([first, second]);
    // Frames go both ways, each as many as the neighbour granted and more once it releases.
    for (let i = 0; i < 3 * SLOTS; i++) {
      await r0.sendNext(Uint8Array.of(i), { timeout: WAIT });
      await r0.sendPrev(Uint8Array.of(i), { timeout: WAIT });
      for (const frame of [await r1.recvPrev({ timeout: WAIT }), await r1.recvNext({ timeout: WAIT })]) {
        expect(frame.data[0]).toBe(i);
        frame.release();
      }
    }
    await expectRejects(r1.recvPrev({ timeout: 50 }), 'ERR_RVMA_TIMEOUT');
    expect([r0.failure, r1.failure]).toEqual([undefined, undefined]);
  });
});
