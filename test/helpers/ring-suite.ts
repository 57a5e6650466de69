// The data path of a ring, run over every provider: ordered exactly-once frames, gathered
// frames, credits, control records, around(), failure and reform (test/ring: loopback in one
// process; test/rdma: verbs in the Soft-RoCE guest).
import { randomBytes } from 'node:crypto';
import { type RingControl, RvmaError } from '../../src';
import { Kind, encodeRecord } from '../../src/ring/records';
import { PROGRESS_MODES, pollUntil } from './endpoints';
import { expectRejects, settledSoon } from './errors';
import {
  type RingTracker,
  WAIT,
  aroundBothWays,
  bytesOf,
  failures,
  forward,
  frameData,
  indexHeader,
  indexOf,
  pollN,
  quiet,
  recvOn,
  same,
  sink,
  source,
  wireFrom,
  creditRecord,
} from './ring';

export interface RingSuiteScale {
  /** Frames each way in the order and exactly-once test. */
  frames: number;
  /** The bound of the tests that move many frames or wait for a failure. */
  longTestMs: number;
}

/**
 * The data path of a ring, in both progress modes, over whatever provider `rings` makes
 * endpoints of.
 */
export function ringSuite(title: string, rings: RingTracker, { frames, longTestMs }: RingSuiteScale): void {
  const { ringOf } = rings;
  describe.each(PROGRESS_MODES)(`${title} (%s progress)`, (progress) => {
    test(`${frames.toLocaleString('en-US')} frames around a 3-rank ring in each direction: every index once, in order, byte-exact`, async () => {
      const ring = await ringOf(3, progress);
      await aroundBothWays(ring, frames, 48);
      for (const r of ring) {
        expect(r.failure).toBeUndefined();
        expect(r.droppedControl).toBe(0);
      }
    }, longTestMs);

    test('frames of 40 KB around a 3-rank ring in each direction, byte-exact (larger than eager sends)', async () => {
      const ring = await ringOf(3, progress);
      await aroundBothWays(ring, 200, 40_000);
      for (const r of ring) expect(r.failure).toBeUndefined();
    }, longTestMs);

    test('tryRecvPrev / tryRecvNext: undefined until a frame has arrived, then the frames in order with no promise; counted by stats()', async () => {
      const [r0, r1] = await ringOf(2, progress);
      expect(r1.tryRecvPrev()).toBeUndefined();
      expect(r0.tryRecvNext()).toBeUndefined();
      const sent0 = r0.stats();
      const received1 = r1.stats();
      for (let i = 0; i < 3; i++) await r0.sendNext([indexHeader(i), frameData(i, 100)], { timeout: WAIT });
      expect(await pollUntil(() => r1.stats().framesReceived - received1.framesReceived === 3)).toBe(true);
      for (let i = 0; i < 3; i++) {
        const frame = r1.tryRecvPrev();
        expect(frame && [frame.seq, indexOf(frame), same(frame.data, frameData(i, 100))]).toEqual([i, i, true]);
        frame!.release();
      }
      expect(r1.tryRecvPrev()).toBeUndefined();
      expect(r0.stats().framesSent - sent0.framesSent).toBe(3);
      await r0.close();
      expect(() => r0.tryRecvPrev()).toThrow(expect.objectContaining({ code: 'ERR_RVMA_CLOSED' }));
      // The survivor's generation failed: tryRecvPrev throws what recvPrev rejects with.
      expect(await pollUntil(() => r1.failure !== undefined)).toBe(true);
      expect(() => r1.tryRecvPrev()).toThrow(expect.objectContaining({ code: 'ERR_RVMA_PEER_LOST' }));
    });

    test('recvManyPrev / recvManyNext: the frames that have arrived, up to max, in order, with no promise', async () => {
      const [r0, r1] = await ringOf(2, progress);
      expect(r1.recvManyPrev(8)).toEqual([]);
      const received1 = r1.stats();
      for (let i = 0; i < 5; i++) await r0.sendNext([indexHeader(i), frameData(i, 64)], { timeout: WAIT });
      expect(await pollUntil(() => r1.stats().framesReceived - received1.framesReceived === 5)).toBe(true);
      const first = r1.recvManyPrev(3);
      const rest = r1.recvManyPrev(8);
      expect([...first, ...rest].map((f) => [f.seq, indexOf(f), same(f.data, frameData(indexOf(f), 64))])).toEqual(
        [0, 1, 2, 3, 4].map((i) => [i, i, true]),
      );
      expect([first.length, rest.length]).toEqual([3, 2]);
      for (const f of [...first, ...rest]) f.release();
      // A recvPrev() that waits takes the next frame first: recvManyPrev() leaves it alone.
      const waiting = r1.recvPrev({ timeout: WAIT });
      expect(r1.recvManyPrev(8)).toEqual([]);
      await r0.sendNext([indexHeader(5), frameData(5, 64)], { timeout: WAIT });
      expect(indexOf(await waiting)).toBe(5);
      expect(() => r1.recvManyPrev(0)).toThrow(expect.objectContaining({ code: 'ERR_RVMA_INVALID_ARGUMENT' }));
      await r0.close();
      expect(() => r0.recvManyNext(1)).toThrow(expect.objectContaining({ code: 'ERR_RVMA_CLOSED' }));
    });

    test('a 1-rank ring sends to itself in both directions', async () => {
      const [ring] = await ringOf(1, progress);
      expect([ring.rank, ring.size, ring.next, ring.prev]).toEqual([0, 1, ring.endpoint.nodeId, ring.endpoint.nodeId]);
      await ring.sendNext([Uint8Array.of(1), Uint8Array.of(2, 3)], { timeout: WAIT });
      await ring.sendPrev(Uint8Array.of(4), { timeout: WAIT });
      const a = await ring.recvPrev({ timeout: WAIT });
      const b = await ring.recvNext({ timeout: WAIT });
      expect([a.seq, bytesOf(a.header), bytesOf(a.data)]).toEqual([0, [1], [2, 3]]);
      expect([b.seq, bytesOf(b.header), bytesOf(b.data)]).toEqual([0, [], [4]]);
    });

    test('gathered frames arrive with header and data byte-exact, empty parts included', async () => {
      const frameBytes = 4096;
      const [r0, r1] = await ringOf(2, progress, { frameBytes });
      const shapes: [number, number][] = [
        [0, 0],
        [0, 1],
        [1, 0],
        [0, 100],
        [100, 0],
        [4, 4092],
        [1024, 0],
        [1024, 1],
        [1024, frameBytes - 1024],
        [frameBytes, 0],
        [0, frameBytes],
        [17, 333],
      ];
      for (const [h, d] of shapes) {
        // Views into larger buffers, at odd offsets: only the views' bytes travel.
        const header = new Uint8Array(randomBytes(h + 8).buffer, 3, h);
        const data = new Uint8Array(randomBytes(d + 8).buffer, 5, d);
        await r0.sendNext([header, data], { timeout: WAIT });
        const f = await r1.recvPrev({ timeout: WAIT });
        expect([f.header.byteLength, f.data.byteLength]).toEqual([h, d]);
        expect(same(f.header, header) && same(f.data, data)).toBe(true);
        f.release();

        await r1.sendPrev([header, data], { timeout: WAIT });
        const g = await r0.recvNext({ timeout: WAIT });
        expect(same(g.header, header) && same(g.data, data)).toBe(true);
        g.release();
      }
      // Plain bytes (any view) give an empty header.
      const plain = randomBytes(300);
      await r0.sendNext(plain, { timeout: WAIT });
      await r0.sendNext(new Float32Array([1.5, -2, 3.25]), { timeout: WAIT });
      const p = await r1.recvPrev({ timeout: WAIT });
      const q = await r1.recvPrev({ timeout: WAIT });
      expect(p.header.byteLength).toBe(0);
      expect(same(p.data, plain)).toBe(true);
      expect(q.header.byteLength).toBe(0);
      expect([...new Float32Array(q.data.slice().buffer)]).toEqual([1.5, -2, 3.25]);
      expect([p.seq, q.seq]).toEqual([shapes.length, shapes.length + 1]);
    });

    test('a frame of up to 64 KiB may change once its send resolved; a larger one has been placed by then', async () => {
      const [r0, r1] = await ringOf(2, progress, { frameBytes: 128 * 1024 });
      for (const size of [100, 16 * 1024, 64 * 1024 - 24, 100 * 1024]) {
        const header = randomBytes(8);
        const data = randomBytes(size);
        const want = [Buffer.from(header), Buffer.from(data)];
        await r0.sendNext([header, data], { timeout: WAIT });
        header.fill(0xee); // the caller reuses its memory at once
        data.fill(0xee);
        const f = await r1.recvPrev({ timeout: WAIT });
        expect(same(f.header, want[0]) && same(f.data, want[1])).toBe(true);
        f.release();
      }
    });

    test('recvPrev({ into }) copies into the caller\'s buffer and frees the slot at once', async () => {
      const slots = 4;
      const [r0, r1] = await ringOf(2, progress, { slots, frameBytes: 1024 });
      const count = 5 * slots;
      const sending = quiet(Promise.all([...Array(count).keys()].map((i) => r0.sendNext([indexHeader(i), frameData(i, 100 + i)], { timeout: WAIT }))));
      for (let i = 0; i < count; i++) {
        const into = new Uint8Array(1024);
        // Never released: `into` returned the buffer to the ring already.
        const f = await r1.recvPrev({ timeout: WAIT, into });
        expect(f.seq).toBe(i);
        expect(indexOf(f)).toBe(i);
        expect(f.data.buffer).toBe(into.buffer);
        expect(f.data.byteOffset).toBe(into.byteOffset);
        expect(f.data.byteLength).toBe(100 + i);
        expect(same(f.data, frameData(i, 100 + i))).toBe(true);
      }
      await sending;

      // A view at an offset into a larger buffer: frame.data starts where `into` does, the bytes around it untouched.
      const memory = new Uint8Array(64).fill(0xee);
      const into = memory.subarray(8, 56);
      await r0.sendNext(frameData(99, 40), { timeout: WAIT });
      const w = await r1.recvPrev({ timeout: WAIT, into });
      expect([w.data.buffer === memory.buffer, w.data.byteOffset, w.data.byteLength]).toEqual([true, 8, 40]);
      expect(same(memory.subarray(8, 48), frameData(99, 40))).toBe(true);
      expect([...memory.subarray(0, 8), ...memory.subarray(48)].every((b) => b === 0xee)).toBe(true);

      // Too small: refused, the frame is given back, and the ring goes on with the next frame.
      await r0.sendNext(frameData(1, 100), { timeout: WAIT });
      await expectRejects(r1.recvPrev({ timeout: WAIT, into: new Uint8Array(99) }), 'ERR_RVMA_TOO_LARGE', /100-byte frame does not fit into 99 bytes/);
      // A pending recv too: the refusal comes when the frame arrives.
      const pending = quiet(r1.recvPrev({ timeout: WAIT, into: new Uint8Array(10) }));
      await r0.sendNext(frameData(2, 11), { timeout: WAIT });
      await expectRejects(pending, 'ERR_RVMA_TOO_LARGE');
      const after = quiet(Promise.all([...Array(2 * slots).keys()].map((i) => r0.sendNext(frameData(3 + i, 50), { timeout: WAIT }))));
      for (let i = 0; i < 2 * slots; i++) {
        const f = await r1.recvPrev({ timeout: WAIT, into: new Uint8Array(50) });
        expect(f.seq).toBe(count + 3 + i);
        expect(same(f.data, frameData(3 + i, 50))).toBe(true);
      }
      await after;
      expect(r1.failure).toBeUndefined();
    });

    test('credits: a receiver holding every slot makes the next send wait; releases let it through, each frame once', async () => {
      const slots = 4;
      const [r0, r1] = await ringOf(2, progress, { slots, frameBytes: 256 });
      await Promise.all([0, 1, 2, 3].map((i) => r0.sendNext([indexHeader(i), frameData(i, 64)], { timeout: WAIT })));
      const held = [];
      for (let i = 0; i < slots; i++) held.push(await r1.recvPrev({ timeout: WAIT }));

      // Frame 100 waits for a credit that never comes: it is never sent.
      await expectRejects(r0.sendNext([indexHeader(100), frameData(100, 64)], { timeout: 200 }), 'ERR_RVMA_TIMEOUT', /waiting for a free buffer/);
      const controller = new AbortController();
      const aborted = quiet(r0.sendNext([indexHeader(101), frameData(101, 64)], { timeout: WAIT, signal: controller.signal }));
      setTimeout(() => controller.abort(), 20);
      await expectRejects(aborted, 'ERR_RVMA_ABORTED', /aborted/);
      await expectRejects(r0.sendNext([indexHeader(102), frameData(102, 64)], { signal: AbortSignal.abort() }), 'ERR_RVMA_ABORTED');

      // Frame 4 waits too, until a slot is released.
      const waiting = quiet(r0.sendNext([indexHeader(4), frameData(4, 64)], { timeout: WAIT }));
      expect(await settledSoon(waiting)).toBe(false);
      for (const f of held) f.release();
      await waiting;
      const more = quiet(Promise.all([5, 6, 7, 8, 9, 10, 11].map((i) => r0.sendNext([indexHeader(i), frameData(i, 64)], { timeout: WAIT }))));
      for (let i = 4; i < 12; i++) {
        const f = await r1.recvPrev({ timeout: WAIT });
        expect([f.seq, indexOf(f)]).toEqual([i, i]);
        expect(same(f.data, frameData(i, 64))).toBe(true);
        f.release();
      }
      await more;
      await expectRejects(r1.recvPrev({ timeout: 100 }), 'ERR_RVMA_TIMEOUT');
      expect(r0.failure).toBeUndefined();
    });

    test('a header may change once sendNext returned, also while the send waits for a credit', async () => {
      const [r0, r1] = await ringOf(2, progress, { slots: 1, frameBytes: 256 });
      await r0.sendNext([indexHeader(0), frameData(0, 64)], { timeout: WAIT });
      // No credit left: frame 1 waits, and its header's bytes are overwritten at once, as a
      // forwarder's are when it released the frame whose header it passes on.
      const header = indexHeader(1);
      const waiting = quiet(r0.sendNext([header, frameData(1, 64)], { timeout: WAIT }));
      header.fill(0xee);
      expect(await settledSoon(waiting)).toBe(false);
      (await r1.recvPrev({ timeout: WAIT })).release();
      await waiting;
      const f = await r1.recvPrev({ timeout: WAIT });
      expect([f.seq, indexOf(f)]).toEqual([1, 1]);
      expect(same(f.data, frameData(1, 64))).toBe(true);
      f.release();
    });

    test('a frame larger than the receiver\'s frameBytes rejects ERR_RVMA_TOO_LARGE; the next frame takes the next seq', async () => {
      const [r0, r1] = await ringOf(2, progress, { frameBytes: 1024 });
      // Maybe before the first credit arrived, maybe after: refused either way, no seq taken.
      const tooLarge = /1025-byte frame is larger than the neighbour's 1024-byte frames/;
      await expectRejects(r0.sendNext(new Uint8Array(1025), { timeout: WAIT }), 'ERR_RVMA_TOO_LARGE', tooLarge);
      await r0.sendNext([new Uint8Array(24), new Uint8Array(1000)], { timeout: WAIT });
      await expectRejects(r0.sendNext([new Uint8Array(25), new Uint8Array(1000)], { timeout: WAIT }), 'ERR_RVMA_TOO_LARGE');
      await expectRejects(r0.sendNext(new Uint8Array(1 << 20), { timeout: WAIT }), 'ERR_RVMA_TOO_LARGE');
      await r0.sendNext(frameData(7, 1024), { timeout: WAIT });
      const a = await r1.recvPrev({ timeout: WAIT });
      const b = await r1.recvPrev({ timeout: WAIT });
      expect([a.seq, a.header.byteLength, a.data.byteLength]).toEqual([0, 24, 1000]);
      expect(b.seq).toBe(1);
      expect(same(b.data, frameData(7, 1024))).toBe(true);
      expect(r0.failure).toBeUndefined();
    });

    test('a send whose signal is already aborted takes no seq: the next frame arrives with the next one', async () => {
      const [r0, r1] = await ringOf(2, progress);
      // After one frame each way the sender holds credits: a send goes out at once (no credit wait).
      await r0.sendNext(Uint8Array.of(0), { timeout: WAIT });
      await r0.sendPrev(Uint8Array.of(0), { timeout: WAIT });
      await expectRejects(r0.sendNext(Uint8Array.of(1), { signal: AbortSignal.abort() }), 'ERR_RVMA_ABORTED', /aborted/);
      await expectRejects(r0.sendPrev([Uint8Array.of(1), Uint8Array.of(1)], { timeout: WAIT, signal: AbortSignal.abort() }), 'ERR_RVMA_ABORTED');
      await r0.sendNext(Uint8Array.of(2), { timeout: WAIT });
      await r0.sendPrev(Uint8Array.of(2), { timeout: WAIT });
      for (const recv of [r1.recvPrev.bind(r1), r1.recvNext.bind(r1)]) {
        const frames = [await recv({ timeout: WAIT }), await recv({ timeout: WAIT })];
        expect(frames.map((f) => [f.seq, bytesOf(f.data)])).toEqual([
          [0, [0]],
          [1, [2]],
        ]);
      }
    });

    test('data frames that look like control records or LEAP markers arrive as data, byte-exact', async () => {
      // Room for every frame: they are all sent before any is received.
      const ring = await ringOf(3, progress, { slots: 64 });
      const [r0, r1, r2] = ring;
      const record: RingControl = { type: 'CONTROL', body: { stop: true } };
      // Exactly what r0 would put into r1's (or r2's) control mailbox.
      const lookalikes = [
        encodeRecord(wireFrom(r0, { kind: Kind.Joined })),
        creditRecord(0, 1_000_000, 1 << 20, 0x100n),
        creditRecord(1, 1_000_000, 1 << 20, 0x100n),
        encodeRecord(wireFrom(r0, { kind: Kind.Around, id: 1, origin: 0, record })),
        encodeRecord(wireFrom(r0, { kind: Kind.Ack, id: 1 })),
        encodeRecord(wireFrom(r0, { kind: Kind.Direct, record })),
        encodeRecord(wireFrom(r0, { kind: Kind.Failed, lost: r1.endpoint.nodeId, reason: 'it closed' })),
        encodeRecord(wireFrom(r0, { kind: Kind.Failed, lost: r2.endpoint.nodeId, reason: 'it closed' })),
        encodeRecord(wireFrom(r0, { kind: Kind.Failed, lost: r0.endpoint.nodeId, reason: 'it closed' })),
        Uint8Array.of(0xc0, 0xde),
        Uint8Array.of(0xc0, 0xde, 0x00, 0x01, 0x02, 0x03),
        Uint8Array.from([0xc0, 0xde, ...encodeRecord(wireFrom(r0, { kind: Kind.Direct, record }))]),
      ];
      const sent: [Uint8Array, Uint8Array][] = [];
      for (const bytes of lookalikes) sent.push([new Uint8Array(0), bytes], [bytes, new Uint8Array(0)], [bytes, bytes]);
      for (const [header, data] of sent) {
        await r0.sendNext([header, data], { timeout: WAIT });
        await r0.sendPrev([header, data], { timeout: WAIT });
      }
      for (const [dir, receiver] of [['next', r1], ['prev', r2]] as const) {
        for (let i = 0; i < sent.length; i++) {
          const f = await recvOn(receiver, dir)({ timeout: WAIT });
          expect(f.seq).toBe(i);
          expect(same(f.header, sent[i][0]) && same(f.data, sent[i][1])).toBe(true);
          f.release();
        }
      }
      for (const r of ring) {
        expect(r.pollControl()).toBeUndefined();
        expect(r.failure).toBeUndefined();
        expect(r.droppedControl).toBe(0);
      }
      // And the ring still carries frames: none of those was taken for a credit or a failure.
      await r0.sendNext(Uint8Array.of(9), { timeout: WAIT });
      expect(bytesOf((await r1.recvPrev({ timeout: WAIT })).data)).toEqual([9]);
    });

    test('control records arrive through control() and pollControl(), never as frames', async () => {
      const ring = await ringOf(3, progress);
      const [r0, r1, r2] = ring;
      const framePrev = quiet(r1.recvPrev({ timeout: 300 }));
      const frameNext = quiet(r2.recvNext({ timeout: 300 }));
      await r0.sendControl({ type: 'CONTROL', body: 'to next' }, { timeout: WAIT });
      await r0.sendControl({ type: 'CONTROL', body: 'to prev' }, { to: 'prev', timeout: WAIT });
      await r0.sendControl({ type: 'RESIZE_LAYERS', rank: 1, start: 0, end: 8, isTail: false }, { to: 1, timeout: WAIT });
      const m1 = await r1.control({ timeout: WAIT });
      expect(m1).toMatchObject({ record: { type: 'CONTROL', body: 'to next' }, from: 0, origin: undefined, generation: 0 });
      await expect(m1.pass()).resolves.toBeUndefined();
      expect(await r2.control({ timeout: WAIT })).toMatchObject({ record: { type: 'CONTROL', body: 'to prev' }, from: 0 });
      expect((await pollN(r1, 1))[0].record).toEqual({ type: 'RESIZE_LAYERS', rank: 1, start: 0, end: 8, isTail: false });
      await expectRejects(framePrev, 'ERR_RVMA_TIMEOUT');
      await expectRejects(frameNext, 'ERR_RVMA_TIMEOUT');
      for (const r of ring) expect(r.pollControl()).toBeUndefined();
      // A control wait times out too, and a record sent later still arrives.
      await expectRejects(r0.control({ timeout: 100 }), 'ERR_RVMA_TIMEOUT');
      await r2.sendControl({ type: 'CONTROL', body: 2 }, { to: 0, timeout: WAIT });
      expect(await r0.control({ timeout: WAIT })).toMatchObject({ record: { type: 'CONTROL', body: 2 }, from: 2 });
      await expectRejects(r0.sendControl({ type: 'CONTROL', body: 0 }, { to: 3 }), 'ERR_RVMA_INVALID_ARGUMENT', /to must be/);
      await expectRejects(r0.sendControl({ type: 'CONTROL', body: 0 }, { to: 'up' as never }), 'ERR_RVMA_INVALID_ARGUMENT', /to/);
    });

    test("control records in a member's name: a stranger's are refused, another member's dropped (the transport names the sender)", async () => {
      const ring = await ringOf(3, progress);
      const [r0, r1, r2] = ring;
      const outsider = await rings.endpoint(progress, 'outsider');
      // Exactly what r0 would put into r1's control mailbox (a fresh endpoint's first generation
      // sits at 0x100): a failure notice naming r2, and an application record.
      const forged = [
        encodeRecord(wireFrom(r0, { kind: Kind.Failed, lost: r2.endpoint.nodeId, reason: 'forged' })),
        encodeRecord(wireFrom(r0, { kind: Kind.Direct, record: { type: 'CONTROL', body: 'forged' } })),
      ];
      // A node outside the ring may not put into its mailboxes at all.
      for (const bytes of forged) await expectRejects(outsider.put(r1.endpoint.nodeId, 0x100n, bytes, { timeout: WAIT }), 'ERR_RVMA_FORBIDDEN');
      // A member may, but records in another member's name count for nothing.
      for (const bytes of forged) await r2.endpoint.put(r1.endpoint.nodeId, 0x100n, bytes, { timeout: WAIT });
      for (let i = 0; i < 2000 && r1.droppedControl < forged.length; i++) await new Promise((r) => setTimeout(r, 5));
      expect(r1.droppedControl).toBe(forged.length);
      expect(r1.failure).toBeUndefined();
      expect(r1.pollControl()).toBeUndefined();
      await r0.sendControl({ type: 'CONTROL', body: 'genuine' }, { to: 1, timeout: WAIT });
      expect(await r1.control({ timeout: WAIT })).toMatchObject({ record: { type: 'CONTROL', body: 'genuine' }, from: 0 });
    });

    test('a node outside the ring is refused by each of its four mailboxes, and the ring runs on', async () => {
      const ring = await ringOf(3, progress);
      const r1 = ring[1];
      const outsider = await rings.endpoint(progress, 'outsider');
      // r1's first generation sits at 0x100: control, frames from prev, frames from next, credits.
      // Into a frame mailbox goes what r0's first frame would be (sequence 0, which r1 waits
      // for): taken, it would break the window and end the generation.
      const frame = new Uint8Array(64);
      frame.set([0x46, 0x52, 1], 0);
      const puts: [bigint, Uint8Array][] = [
        [0x100n, encodeRecord(wireFrom(ring[0], { kind: Kind.Direct, record: { type: 'CONTROL', body: 'stranger' } }))],
        [0x101n, frame],
        [0x102n, frame],
        [0x103n, creditRecord(0, 1000, 1 << 20, 0x100n)],
      ];
      for (const [vaddr, bytes] of puts) {
        await expectRejects(outsider.put(r1.endpoint.nodeId, vaddr, bytes, { append: true, timeout: WAIT }), 'ERR_RVMA_FORBIDDEN');
      }
      await aroundBothWays(ring, 20, 256);
      const passed = ring.slice(1).map(async (r) => (await r.control({ timeout: WAIT })).pass({ timeout: WAIT }));
      await ring[0].around({ type: 'CONTROL', body: 'after the stranger' }, { timeout: WAIT });
      await Promise.all(passed);
      expect(ring.map((r) => r.failure)).toEqual([undefined, undefined, undefined]);
      expect(r1.droppedControl).toBe(0);
    });

    test('pollControl() never blocks and returns records in arrival order', async () => {
      const [r0, r1] = await ringOf(2, progress);
      expect(r1.pollControl()).toBeUndefined();
      expect(r0.pollControl()).toBeUndefined();
      for (let i = 0; i < 5; i++) await r0.sendControl({ type: 'CONTROL', body: { i } }, { timeout: WAIT });
      const got = await pollN(r1, 5);
      expect(got.map((m) => m.record)).toEqual([0, 1, 2, 3, 4].map((i) => ({ type: 'CONTROL', body: { i } })));
      expect(got.every((m) => m.from === 0 && m.origin === undefined && m.generation === 0)).toBe(true);
      expect(r1.pollControl()).toBeUndefined();
    });

    test('around(): every other rank gets the record from its prev, passes it, and the origin resolves', async () => {
      const ring = await ringOf(3, progress);
      const records: RingControl[] = [
        { type: 'RESIZE_LAYERS', rank: 2, start: 10, end: 20, isTail: true },
        { type: 'RESIZE_CHAIN', ranges: [{ start: 0, end: 10 }, { start: 10, end: 10 }, { start: 10, end: 32 }] },
        { type: 'RESIZE_CHAIN', ranges: [] },
        { type: 'CONTROL', body: { op: 'drain', ids: [1, 2, 3], nested: { deep: [{ a: null }, 'x', -1.5, true] }, text: 'é𐀀' } },
        { type: 'CONTROL', body: null },
      ];
      for (const record of records) {
        const applied = ring.slice(1).map(async (r) => {
          const m = await r.control({ timeout: WAIT });
          expect(m.record).toEqual(record);
          expect([m.origin, m.from, m.generation]).toEqual([0, r.rank - 1, 0]);
          await m.pass({ timeout: WAIT });
          await m.pass({ timeout: WAIT }); // only the first call sends
        }).map(quiet);
        await ring[0].around(record, { timeout: WAIT });
        await Promise.all(applied);
      }
      for (const r of ring) {
        expect(r.pollControl()).toBeUndefined();
        expect(r.droppedControl).toBe(0);
      }

      // pass() with a signal aborted already rejects; a later pass() hands the record on.
      const aborted = ring.slice(1).map(async (r) => {
        const m = await r.control({ timeout: WAIT });
        await expectRejects(m.pass({ signal: AbortSignal.abort() }), 'ERR_RVMA_ABORTED');
        await m.pass();
      }).map(quiet);
      await ring[0].around({ type: 'CONTROL', body: 'after an abort' }, { timeout: WAIT });
      await Promise.all(aborted);

      // Any rank may start one.
      const fromTwo = [ring[0], ring[1]].map(async (r) => {
        const m = await r.control({ timeout: WAIT });
        expect([m.origin, m.from]).toEqual([2, (r.rank + 2) % 3]);
        await m.pass();
      }).map(quiet);
      await ring[2].around({ type: 'CONTROL', body: 'from 2' }, { timeout: WAIT });
      await Promise.all(fromTwo);
    });

    test('around() times out when a rank withholds pass(); the ring goes on', async () => {
      const ring = await ringOf(3, progress);
      const record: RingControl = { type: 'CONTROL', body: 'slow' };
      const passing = quiet(ring[1].control({ timeout: WAIT }).then((m) => m.pass()));
      const withheld = quiet(ring[2].control({ timeout: WAIT }));
      await expectRejects(ring[0].around(record, { timeout: 300 }), 'ERR_RVMA_TIMEOUT', /Ring\.around timed out after 300 ms/);
      await passing;
      await (await withheld).pass(); // the late acknowledgement is ignored
      const again = ring.slice(1).map((r) => quiet(r.control({ timeout: WAIT }).then((m) => m.pass())));
      await ring[0].around({ type: 'CONTROL', body: 'again' }, { timeout: WAIT });
      await Promise.all(again);
      const controller = new AbortController();
      const pending = quiet(ring[0].around(record, { timeout: WAIT, signal: controller.signal }));
      controller.abort();
      await expectRejects(pending, 'ERR_RVMA_ABORTED');
      for (const r of ring) expect(r.failure).toBeUndefined();
    });

    test('a 1-rank ring\'s around() resolves at once', async () => {
      const [ring] = await ringOf(1, progress);
      await ring.around({ type: 'RESIZE_CHAIN', ranges: [{ start: 0, end: 4 }] }, { timeout: WAIT });
      expect(ring.pollControl()).toBeUndefined();
    });

    test('invalid records reject ERR_RVMA_INVALID_ARGUMENT and send nothing', async () => {
      const [r0, r1] = await ringOf(2, progress);
      const bad: [unknown, RegExp][] = [
        [undefined, /control record must be an object/],
        [null, /control record must be an object/],
        ['CONTROL', /control record must be an object/],
        [[], /control record must be an object/],
        [{}, /unknown control type/],
        [{ type: 'RESIZE' }, /unknown control type "RESIZE"/],
        [{ type: 'RESIZE_LAYERS', rank: 0, start: -1, end: 4, isTail: false }, /RESIZE_LAYERS\.start must be a non-negative integer/],
        [{ type: 'RESIZE_LAYERS', rank: 0, start: 5, end: 4, isTail: false }, /RESIZE_LAYERS\.end is before its start/],
        [{ type: 'RESIZE_LAYERS', rank: 0, start: 0, end: 4, isTail: 'no' }, /isTail must be a boolean/],
        [{ type: 'RESIZE_LAYERS', rank: 0, start: 0, end: 4 }, /isTail must be a boolean/],
        [{ type: 'RESIZE_LAYERS', rank: 0.5, start: 0, end: 4, isTail: false }, /rank must be a non-negative integer/],
        [{ type: 'RESIZE_LAYERS', rank: 0, start: 0, end: 4, isTail: false, extra: 1 }, /unknown field "extra"/],
        [{ type: 'RESIZE_CHAIN' }, /ranges must be an array/],
        [{ type: 'RESIZE_CHAIN', ranges: [{ start: 3, end: 2 }] }, /ranges\[0\] ends before it starts/],
        [{ type: 'RESIZE_CHAIN', ranges: [{ start: 0, end: 2, layer: 1 }] }, /ranges\[0\] must be \{ start, end \}/],
        [{ type: 'RESIZE_CHAIN', ranges: [], more: [] }, /unknown field "more"/],
        [{ type: 'CONTROL', body: 1, extra: 2 }, /CONTROL has an unknown field "extra"/],
      ];
      for (const [record, message] of bad) {
        await expectRejects(r0.around(record as never, { timeout: WAIT }), 'ERR_RVMA_INVALID_ARGUMENT', message);
        await expectRejects(r0.sendControl(record as never, { timeout: WAIT }), 'ERR_RVMA_INVALID_ARGUMENT', message);
      }
      await expectRejects(r0.around({ type: 'CONTROL', body: 1 }, { timeout: -1 }), 'ERR_RVMA_INVALID_ARGUMENT', /timeout/);
      await expectRejects(r0.sendControl({ type: 'CONTROL', body: 1 }, { colour: 1 } as never), 'ERR_RVMA_INVALID_ARGUMENT', /unknown option "colour"/);
      // Nothing went out: the first record r1 sees is the valid one sent next.
      await r0.sendControl({ type: 'CONTROL', body: 'valid' }, { timeout: WAIT });
      expect((await r1.control({ timeout: WAIT })).record).toEqual({ type: 'CONTROL', body: 'valid' });
      expect(r1.pollControl()).toBeUndefined();
      expect(r1.droppedControl).toBe(0);
    });

    test('a record msgpack cannot encode, or too large for the receiver, is refused typed; the ring goes on', async () => {
      const [r0, r1] = await ringOf(2, progress);
      const unencodable: RingControl = { type: 'CONTROL', body: { big: 2n ** 70n } };
      await expectRejects(r0.around(unencodable, { timeout: WAIT }), 'ERR_RVMA_INVALID_ARGUMENT', /cannot be encoded/);
      await expectRejects(r0.sendControl(unencodable, { timeout: WAIT }), 'ERR_RVMA_INVALID_ARGUMENT', /cannot be encoded/);
      await expectRejects(r0.sendControl({ type: 'CONTROL', body: Symbol('s') }, { timeout: WAIT }), 'ERR_RVMA_INVALID_ARGUMENT', /cannot be encoded/);
      // Larger than the receiver's controlBytes (16384 by default).
      await expectRejects(r0.sendControl({ type: 'CONTROL', body: 'x'.repeat(20_000) }, { timeout: WAIT }), 'ERR_RVMA_TOO_LARGE');
      // An around() record the next rank refuses as too large rejects the origin's around().
      await expectRejects(r0.around({ type: 'CONTROL', body: 'x'.repeat(20_000) }, { timeout: WAIT }), 'ERR_RVMA_TOO_LARGE');
      expect([r0.failure, r1.failure]).toEqual([undefined, undefined]);
      const passed = quiet(r1.control({ timeout: WAIT }).then((m) => (expect(m.record).toEqual({ type: 'CONTROL', body: 'fine' }), m.pass())));
      await r0.around({ type: 'CONTROL', body: 'fine' }, { timeout: WAIT });
      await passed;
      expect(r1.pollControl()).toBeUndefined();
    });

    test('bad send and receive arguments reject ERR_RVMA_INVALID_ARGUMENT', async () => {
      const [r0] = await ringOf(2, progress);
      await expectRejects(r0.sendNext('text' as never), 'ERR_RVMA_INVALID_ARGUMENT', /data/);
      await expectRejects(r0.sendNext([Uint8Array.of(1)] as never), 'ERR_RVMA_INVALID_ARGUMENT', /gathered put/);
      await expectRejects(r0.sendPrev(Uint8Array.of(1), { timeout: 'soon' } as never), 'ERR_RVMA_INVALID_ARGUMENT', /timeout/);
      await expectRejects(r0.recvPrev({ into: 'buffer' } as never), 'ERR_RVMA_INVALID_ARGUMENT', /into/);
      await expectRejects(r0.recvNext({ colour: 1 } as never), 'ERR_RVMA_INVALID_ARGUMENT', /unknown option "colour"/);
      await expectRejects(r0.control({ timeout: -5 }), 'ERR_RVMA_INVALID_ARGUMENT', /timeout/);
    });

    for (const how of ['its ring closes', 'its endpoint closes'] as const) {
      test(`a member lost (${how}): every pending op on the others rejects ERR_RVMA_PEER_LOST, then reform to 2 ranks`, async () => {
        const ring = await ringOf(3, progress, { slots: 2 });
        const [r0, r1, r2] = ring;
        const lostId = r1.endpoint.nodeId;
        const f0 = failures(r0);
        const f2 = failures(r2);

        // r2 uses both of r0's slots, so its next send waits for a credit.
        await r2.sendNext(Uint8Array.of(1), { timeout: WAIT });
        await r2.sendNext(Uint8Array.of(2), { timeout: WAIT });
        const pending = {
          recvNext0: r0.recvNext({ timeout: WAIT }),
          around0: r0.around({ type: 'CONTROL', body: 'never' }, { timeout: WAIT }),
          recvPrev2: r2.recvPrev({ timeout: WAIT }),
          recvNext2: r2.recvNext({ timeout: WAIT }),
          sendNext2: r2.sendNext(Uint8Array.of(3), { timeout: WAIT }),
        };
        // A control wait belongs to the ring, not to the generation: it outlives the failure.
        const control0 = r0.control({ timeout: WAIT });
        control0.catch(() => undefined);
        for (const p of Object.values(pending)) p.catch(() => undefined);
        expect(await settledSoon(Promise.race(Object.values(pending)))).toBe(false);

        if (how === 'its ring closes') await r1.close();
        else await r1.endpoint.close();

        const name = new RegExp(`node "${lostId}"`);
        for (const p of Object.values(pending)) await expectRejects(p, 'ERR_RVMA_PEER_LOST', name);
        for (const [r, f] of [[r0, f0], [r2, f2]] as const) {
          const failed = await f.first;
          expect(failed.generation).toBe(0);
          expect(failed.lost).toBe(lostId);
          expect(failed.error).toBeInstanceOf(RvmaError);
          expect(failed.error.code).toBe('ERR_RVMA_PEER_LOST');
          expect(failed.error.message).toMatch(name);
          expect(r.failure).toBe(failed.error);
          await expectRejects(r.sendNext(Uint8Array.of(0), { timeout: WAIT }), 'ERR_RVMA_PEER_LOST', name);
          await expectRejects(r.sendPrev(Uint8Array.of(0), { timeout: WAIT }), 'ERR_RVMA_PEER_LOST', name);
          await expectRejects(r.recvPrev({ timeout: WAIT }), 'ERR_RVMA_PEER_LOST', name);
          await expectRejects(r.recvNext({ timeout: WAIT }), 'ERR_RVMA_PEER_LOST', name);
          await expectRejects(r.around({ type: 'CONTROL', body: 1 }, { timeout: WAIT }), 'ERR_RVMA_PEER_LOST', name);
          await expectRejects(r.sendControl({ type: 'CONTROL', body: 1 }, { timeout: WAIT }), 'ERR_RVMA_PEER_LOST', name);
          // The failed generation still says who it was.
          expect([r.generation, r.size]).toEqual([0, 3]);
        }
        expect(await settledSoon(control0)).toBe(false);

        await Promise.all([r0.reform({ timeout: WAIT }), r2.reform({ timeout: WAIT })]);
        for (const r of [r0, r2]) {
          expect([r.size, r.generation, r.failure]).toEqual([2, 1, undefined]);
          expect(r.members).toEqual([r0.endpoint.nodeId, r2.endpoint.nodeId]);
        }
        expect([r0.rank, r2.rank]).toEqual([0, 1]);
        expect([r0.next, r0.prev, r2.next, r2.prev]).toEqual([r2.endpoint.nodeId, r2.endpoint.nodeId, r0.endpoint.nodeId, r0.endpoint.nodeId]);

        // Traffic of the new generation: seqs from 0 again, frames of the old one gone.
        const sinks = Promise.all([sink(r0, 'next', 100, 32), sink(r0, 'prev', 100, 32)]);
        await Promise.all([source(r0, 'next', 100, 32), source(r0, 'prev', 100, 32), forward(r2, 'next', 100), forward(r2, 'prev', 100), sinks]);
        for (const s of await sinks) expect(s).toEqual({ received: 100, bad: 0, firstBad: undefined });
        await r2.sendControl({ type: 'CONTROL', body: 'gen 1' }, { timeout: WAIT });
        expect(await control0).toMatchObject({ record: { type: 'CONTROL', body: 'gen 1' }, from: 1, generation: 1 });
        const passed = quiet(r2.control({ timeout: WAIT }).then((m) => m.pass()));
        await r0.around({ type: 'CONTROL', body: 'around gen 1' }, { timeout: WAIT });
        await passed;
        expect([f0.events.length, f2.events.length]).toEqual([1, 1]);
      }, longTestMs);
    }

    test('reform drops the old generation\'s frames and control records not yet received', async () => {
      const [r0, r1, r2] = await ringOf(3, progress);
      const lost = [failures(r0), failures(r2)];
      // Placed in r0's mailboxes before r1 leaves: r0 has them queued when its generation fails.
      await r2.sendControl({ type: 'CONTROL', body: 'gen 0' }, { to: 0, timeout: WAIT });
      await r2.sendNext(Uint8Array.of(7), { timeout: WAIT });
      await r1.close();
      await Promise.all(lost.map((l) => l.first));
      await Promise.all([r0.reform({ timeout: WAIT }), r2.reform({ timeout: WAIT })]);
      expect(r0.pollControl()).toBeUndefined();
      await expectRejects(r0.recvPrev({ timeout: 200 }), 'ERR_RVMA_TIMEOUT');
      await r2.sendControl({ type: 'CONTROL', body: 'gen 1' }, { timeout: WAIT });
      await r2.sendNext(Uint8Array.of(8), { timeout: WAIT });
      expect(await r0.control({ timeout: WAIT })).toMatchObject({ record: { body: 'gen 1' }, from: 1, generation: 1 });
      const f = await r0.recvPrev({ timeout: WAIT });
      expect([f.seq, bytesOf(f.data)]).toEqual([0, [8]]);
    });

    test('reform with size 3 and a newcomer gives a complete ring of 3 again', async () => {
      const ring = await ringOf(3, progress);
      const [r0, r1, r2] = ring;
      const lost = failures(r0);
      const lost2 = failures(r2);
      await r1.close();
      await lost.first;
      await lost2.first;
      const group = r0.group;
      const newcomer = await rings.endpoint(progress, 'newcomer');
      const [, , r3] = await Promise.all([
        r0.reform({ size: 3, timeout: WAIT }),
        r2.reform({ size: 3, timeout: WAIT }),
        rings.join(newcomer, { group, size: 3, timeout: WAIT }),
      ]);
      for (const r of [r0, r2, r3]) {
        expect([r.size, r.generation, r.failure]).toEqual([3, 1, undefined]);
        expect(r.members).toEqual([r0.endpoint.nodeId, r2.endpoint.nodeId, newcomer.nodeId]);
      }
      expect([r0.rank, r2.rank, r3.rank]).toEqual([0, 1, 2]);
      const count = 500;
      const sinks = Promise.all([sink(r0, 'next', count, 64), sink(r0, 'prev', count, 64)]);
      await Promise.all([
        source(r0, 'next', count, 64),
        source(r0, 'prev', count, 64),
        ...[r2, r3].flatMap((r) => [forward(r, 'next', count), forward(r, 'prev', count)]),
        sinks,
      ]);
      for (const s of await sinks) expect(s).toEqual({ received: count, bad: 0, firstBad: undefined });
    }, longTestMs);
  });
}
