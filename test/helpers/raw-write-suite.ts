// Raw one-sided writes, the same behaviour over every transport that carries them (verbs: an
// RDMA write; shm: process_vm_writev into the peer's region, or placed by the owner where that
// is not permitted): bytes at their offsets, refusals typed, a closed region withdrawn.
import { type Endpoint, type ProgressMode, type RvmaError } from '../../src';
import { asBuffer, pattern } from './data';
import { VADDR } from './endpoints';
import { expectRejects } from './errors';

/** Registers the suite's tests for endpoints made by pair() (call inside a describe). */
export function rawWriteSuite(pair: (progress: ProgressMode) => Promise<{ owner: Endpoint; writer: Endpoint }>, progress: ProgressMode): void {
  test('bytes land exactly at their offsets, staged and registered sources alike', async () => {
    const { owner, writer } = await pair(progress);
    const size = 8 << 20;
    const region = owner.registerRegion(size);
    const writes = [
      { offset: 0, len: 1 },
      { offset: 1, len: 4095 },
      { offset: 4096, len: 16 * 1024 },
      { offset: 20_000, len: 16 * 1024 + 1 },
      { offset: 1 << 20, len: (3 << 20) + 7 },
      { offset: size - 65536, len: 65536 },
    ];
    const expected = Buffer.alloc(size);
    for (const [i, w] of writes.entries()) {
      const data = pattern(w.len, i + 1);
      data.copy(expected, w.offset);
      await writer.rawWrite(owner.address, region.key, w.offset, data);
      expect(await region.next({ timeout: 30_000 })).toEqual({ offset: w.offset, bytes: w.len });
    }
    expect(asBuffer(region.buffer).equals(expected)).toBe(true);
  });

  test('many writes at once (more than the window) to two regions all land, each reported once', async () => {
    const { owner, writer } = await pair(progress);
    const regions = [owner.registerRegion(64 * 300), owner.registerRegion(64 * 300)];
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      for (const [r, region] of regions.entries()) {
        writes.push(writer.rawWrite(owner.address, region.key, i * 64, pattern(64, 1000 * r + i)));
      }
    }
    await Promise.all(writes);
    for (const [r, region] of regions.entries()) {
      const offsets = new Set<number>();
      for (let i = 0; i < 300; i++) {
        const write = await region.next({ timeout: 30_000 });
        expect(write.bytes).toBe(64);
        offsets.add(write.offset);
      }
      expect(offsets.size).toBe(300);
      const expected = Buffer.concat(Array.from({ length: 300 }, (_, i) => pattern(64, 1000 * r + i)));
      expect(asBuffer(region.buffer).equals(expected)).toBe(true);
    }
  });

  test('writes past the region are refused before anything is sent; unknown keys are refused typed', async () => {
    const { owner, writer } = await pair(progress);
    const region = owner.registerRegion(4096);
    await expectRejects(writer.rawWrite(owner.address, region.key ^ 1n, 0, Buffer.alloc(8, 1)), 'ERR_RVMA_NO_MAILBOX');
    // The first write fetches the region; the refusals below then never leave the writer.
    await writer.rawWrite(owner.address, region.key, 0, Buffer.alloc(8, 2));
    expect(await region.next({ timeout: 30_000 })).toEqual({ offset: 0, bytes: 8 });
    await expectRejects(writer.rawWrite(owner.address, region.key, 4090, Buffer.alloc(8, 3)), 'ERR_RVMA_OUT_OF_BOUNDS');
    await expectRejects(writer.rawWrite(owner.address, region.key, 5000, Buffer.alloc(1, 3)), 'ERR_RVMA_OUT_OF_BOUNDS');
    await expectRejects(writer.rawWrite(owner.address, region.key, 0, Buffer.alloc(8192, 3)), 'ERR_RVMA_TOO_LARGE');
    await expectRejects(writer.rawWrite(owner.address, region.key ^ 2n, 0, Buffer.alloc(8, 3)), 'ERR_RVMA_NO_MAILBOX');
    await writer.rawWrite(owner.address, region.key, 4088, Buffer.alloc(8, 4));
    // The next report is the last write: none of the refused ones reached the owner.
    expect(await region.next({ timeout: 30_000 })).toEqual({ offset: 4088, bytes: 8 });
    const expected = Buffer.alloc(4096);
    expected.fill(2, 0, 8);
    expected.fill(4, 4088);
    expect(asBuffer(region.buffer).equals(expected)).toBe(true);
  });

  test('a closed region is withdrawn: later writes fail typed, writes racing the close fail typed or land, the connection stays up', async () => {
    const { owner, writer } = await pair(progress);
    const lost: unknown[] = [];
    writer.on('peerLost', (info) => lost.push(info));
    owner.on('peerLost', (info) => lost.push(info));
    const region = owner.registerRegion(1 << 20);
    await writer.rawWrite(owner.address, region.key, 0, pattern(1 << 20, 1));
    // Small (staged) and large (registered) writes in flight while the region closes.
    const racing = Array.from({ length: 40 }, (_, i) =>
      writer.rawWrite(owner.address, region.key, i * 16384, pattern(i % 2 ? 16384 : 100, i)).then(
        () => 'ok',
        (error: RvmaError) => error.code,
      ),
    );
    region.close();
    for (const outcome of await Promise.all(racing)) expect(['ok', 'ERR_RVMA_NO_MAILBOX']).toContain(outcome);
    await expectRejects(writer.rawWrite(owner.address, region.key, 0, Buffer.alloc(8)), 'ERR_RVMA_NO_MAILBOX');
    await expectRejects(writer.rawWrite(owner.address, region.key, 0, Buffer.alloc(65536)), 'ERR_RVMA_NO_MAILBOX');
    // Same connection, still healthy: a new region and a mailbox put both work.
    const again = owner.registerRegion(64);
    await writer.rawWrite(owner.address, again.key, 0, Buffer.alloc(64, 7));
    expect(await again.next({ timeout: 30_000 })).toEqual({ offset: 0, bytes: 64 });
    const mailbox = owner.openMailbox(VADDR);
    mailbox.post(16);
    await writer.put(owner.address, VADDR, Buffer.alloc(16, 8));
    expect(await mailbox.next({ timeout: 30_000 })).toMatchObject({ bytes: 16, ops: 1 });
    expect(lost).toEqual([]);
  });

  test('connect(address) resolves with the node id, which then names the peer for raw writes', async () => {
    const { owner, writer } = await pair(progress);
    expect(await writer.connect(owner.address, { timeout: 30_000 })).toBe(owner.nodeId);
    const region = owner.registerRegion(32);
    await writer.rawWrite(owner.nodeId, region.key, 16, Buffer.alloc(16, 9));
    expect(await region.next({ timeout: 30_000 })).toEqual({ offset: 16, bytes: 16 });
    expect(asBuffer(region.buffer).subarray(16).equals(Buffer.alloc(16, 9))).toBe(true);
  });
}
