// The buffer pool behind allocBuffer: a collected buffer's memory is handed out again, zeroed,
// and the pool never holds more than its limit.
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { allocBuffer, bufferPoolStats, setBufferPoolLimit } from '../../src';
import { expectThrows } from '../helpers/errors';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const DEFAULT_LIMIT = bufferPoolStats().limitBytes;
/** 37 pages and a bit: a capacity (38 pages) no other buffer of this process is likely to have. */
const SIZE = 37 * 4096 + 123;
const CAPACITY = 38 * 4096;
/** Buffers the tests took and keep: only the one a test drops comes back while it waits. */
const kept: Uint8Array[] = [];
const take = (size: number): Uint8Array => {
  const buffer = allocBuffer(size);
  kept.push(buffer);
  return buffer;
};

/** A buffer of `size` bytes filled with 0xab, dropped: resolves once its memory is back (kept or freed). */
async function dropDirty(size: number): Promise<void> {
  const before = bufferPoolStats().returned;
  let buffer: Uint8Array | undefined = allocBuffer(size).fill(0xab);
  expect(buffer.byteLength).toBe(size);
  buffer = undefined;
  // The finalizer may run on a later turn than the collection (Node defers it): wait for it.
  for (let i = 0; i < 300 && bufferPoolStats().returned === before; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, i < 20 ? 0 : 10));
  }
  expect(bufferPoolStats().returned).toBe(before + 1);
}

afterEach(() => setBufferPoolLimit(DEFAULT_LIMIT));

test('a collected buffer is handed out again, zeroed, at its exact length', async () => {
  setBufferPoolLimit(0); // empty: what comes back next is ours
  setBufferPoolLimit(DEFAULT_LIMIT);
  await dropDirty(SIZE);
  const held = bufferPoolStats();
  expect(held.pooledBytes).toBeGreaterThanOrEqual(CAPACITY);
  const again = take(SIZE - 100); // same capacity, another length
  const after = bufferPoolStats();
  expect(after.reused).toBe(held.reused + 1);
  expect(after.fresh).toBe(held.fresh);
  expect(after.pooledBytes).toBe(held.pooledBytes - CAPACITY);
  expect(again.byteLength).toBe(SIZE - 100);
  expect(again.every((b) => b === 0)).toBe(true);
});

test('a limit of 0 frees what the pool holds, and collected buffers go back to the system', async () => {
  await dropDirty(SIZE);
  setBufferPoolLimit(0);
  expect(bufferPoolStats()).toMatchObject({ pooledBytes: 0, limitBytes: 0 });
  await dropDirty(SIZE);
  expect(bufferPoolStats().pooledBytes).toBe(0);
  const before = bufferPoolStats();
  expect(take(SIZE).every((b) => b === 0)).toBe(true);
  expect(bufferPoolStats()).toMatchObject({ fresh: before.fresh + 1, reused: before.reused });
});

test('a limit smaller than a buffer keeps none of it', async () => {
  setBufferPoolLimit(0);
  setBufferPoolLimit(CAPACITY - 1);
  await dropDirty(SIZE);
  expect(bufferPoolStats().pooledBytes).toBe(0);
});

test('huge-page buffers (2 MiB and more) are pooled in 2 MiB units', async () => {
  setBufferPoolLimit(0);
  setBufferPoolLimit(DEFAULT_LIMIT);
  await dropDirty((2 << 20) + 1);
  expect(bufferPoolStats().pooledBytes).toBe(4 << 20);
  const again = take((4 << 20) - 5);
  expect(bufferPoolStats().pooledBytes).toBe(0);
  expect(again.every((b) => b === 0)).toBe(true);
});

test('setBufferPoolLimit refuses what is not a byte count', () => {
  for (const bad of [-1, 1.5, Number.NaN, '64' as unknown as number]) {
    expectThrows(() => setBufferPoolLimit(bad), 'ERR_RVMA_INVALID_ARGUMENT', /setBufferPoolLimit.*bytes/);
  }
});
