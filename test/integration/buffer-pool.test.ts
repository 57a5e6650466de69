// The buffer pool behind allocBuffer: a collected buffer's memory is handed out again, zeroed,
// and the pool never holds more than its limit. Each scenario runs in a fresh process
// (test/fixtures/buffer-pool.js), where no other buffer is collected while it counts. Buffers
// of 64 KiB and more come from the shared arena, up to its limit.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { setArenaLimit, setBufferPoolLimit } from '../../src';
import { FIXTURES } from '../helpers/children';
import { expectThrows } from '../helpers/errors';

const PAGE = 4096;
const CAPACITY = 38 * PAGE; // of the fixture's 37-page-and-a-bit buffers
const MiB = 1 << 20;

interface Stats {
  pooledBytes: number;
  limitBytes: number;
  reused: number;
  fresh: number;
  returned: number;
}

/** Runs one scenario of the fixture; resolves with what it printed. */
function scenario(name: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', path.join(FIXTURES, 'buffer-pool.js'), name], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`buffer-pool.js ${name} failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

test('a collected buffer is handed out again, zeroed, at its exact length', async () => {
  const r = await scenario('reuse');
  const held = r.held as Stats;
  expect(r.returned).toBe(1);
  expect(held.pooledBytes).toBe(CAPACITY);
  expect(r.again).toEqual({ length: 37 * PAGE + 23, zeroed: true });
  expect(r.after).toMatchObject({ pooledBytes: 0, reused: held.reused + 1, fresh: held.fresh });
}, 40_000);

test('a limit of 0 frees what the pool holds, and collected buffers go back to the system', async () => {
  const r = await scenario('limitZero');
  expect(r.cleared).toMatchObject({ pooledBytes: 0, limitBytes: 0 });
  expect(r.returned).toBe(1);
  expect((r.dropped as Stats).pooledBytes).toBe(0);
  expect(r.fresh).toEqual({ length: 37 * PAGE + 123, zeroed: true });
  const dropped = r.dropped as Stats;
  expect(r.after).toMatchObject({ fresh: dropped.fresh + 1, reused: dropped.reused });
}, 40_000);

test('a limit smaller than a buffer keeps none of it', async () => {
  const r = await scenario('smallLimit');
  expect(r.returned).toBe(1);
  expect((r.after as Stats).pooledBytes).toBe(0);
}, 40_000);

test('huge-page buffers (2 MiB and more) are pooled in 2 MiB units', async () => {
  const r = await scenario('huge');
  expect(r.returned).toBe(1);
  expect((r.held as Stats).pooledBytes).toBe(4 * MiB);
  expect(r.again).toEqual({ length: 4 * MiB - 5, zeroed: true });
  expect((r.after as Stats).pooledBytes).toBe(0);
}, 40_000);

test('setBufferPoolLimit refuses what is not a byte count', () => {
  for (const bad of [-1, 1.5, Number.NaN, '64' as unknown as number]) {
    expectThrows(() => setBufferPoolLimit(bad), 'ERR_RVMA_INVALID_ARGUMENT', /setBufferPoolLimit.*bytes/);
  }
});

test('the arena holds buffers of 64 KiB and more up to its limit, and gets them back once the pool lets go', async () => {
  const r = await scenario('arena');
  const KiB64 = 64 * 1024;
  expect(r.returned).toBe(1);
  expect(r.steps).toEqual({
    start: 0,
    limit: 16 * 2 ** 30, // the arena's size
    small: 0, // 60 KiB (15 pages): ordinary memory
    large: KiB64,
    pastLimit: KiB64, // one more would pass the limit: ordinary memory
    limitAbove: 16 * 2 ** 30, // a limit above the arena's size is its size
    dropped: KiB64, // the dropped 128 KiB came from the arena and went back to it
    limitZero: KiB64, // 0: nothing new in the arena
  });
}, 40_000);

test('setArenaLimit refuses what is not a byte count', () => {
  for (const bad of [-1, 1.5, Number.NaN, '64' as unknown as number]) {
    expectThrows(() => setArenaLimit(bad), 'ERR_RVMA_INVALID_ARGUMENT', /setArenaLimit.*bytes/);
  }
});
