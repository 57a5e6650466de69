// rvma perf's control records against what a hostile or broken client sends: the decoder never
// throws and takes only JSON objects with a string op; a prepare request is served only within
// its bounds (the server's memory, counts, window). A live server fed such records answers
// each with an error and goes on serving a real client.
import fc from 'fast-check';
import { Endpoint } from '../../src';
import { perfClient } from '../../src/cli/perf/client';
import { CONTROL_BYTES, CONTROL_VADDR, MAX_TEST_BYTES, PERF_TESTS, decode, prepareRefusal, serverBytes } from '../../src/cli/perf/protocol';
import { perfServer } from '../../src/cli/perf/server';

const RUNS = 2000;

describe('perf control records', () => {
  test('decode: arbitrary bytes never throw; only JSON objects with a string op come back', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        const m = decode(bytes);
        expect(m === undefined || (typeof m === 'object' && typeof m.op === 'string')).toBe(true);
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const m = decode(new TextEncoder().encode(JSON.stringify(value)));
        const isRecord = typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { op?: unknown }).op === 'string';
        expect(m !== undefined).toBe(isRecord);
      }),
      { numRuns: RUNS },
    );
  });

  test('prepareRefusal: any object is judged without throwing; what passes is within every bound', () => {
    const anyField = fc.oneof(fc.constantFrom(...PERF_TESTS), fc.integer(), fc.double(), fc.string(), fc.constant(null), fc.constant(2 ** 53), fc.nat(1 << 30));
    fc.assert(
      fc.property(fc.record({ test: anyField, size: anyField, count: anyField, window: anyField }, { requiredKeys: [] }), (r) => {
        const refusal = prepareRefusal(r);
        if (refusal !== undefined) return;
        expect(PERF_TESTS).toContain(r.test);
        for (const k of ['size', 'count', 'window'] as const) expect(Number.isSafeInteger(r[k]) && (r[k] as number) >= 1).toBe(true);
        expect(serverBytes(r as never)).toBeLessThanOrEqual(MAX_TEST_BYTES);
      }),
      { numRuns: RUNS },
    );
    expect(prepareRefusal({ test: 'rate', size: 1 << 20, count: 1e6, window: 16 })).toMatch(/needs \d+ bytes at the server/);
    expect(prepareRefusal({ test: 'bw', size: 65536, count: 1100, window: 16 })).toBeUndefined();
  });

  test('a live server answers hostile records with errors and serves a real client after them', async () => {
    const stop = new AbortController();
    let address = '';
    const listening = new Promise<void>((resolve) => {
      void perfServer({
        listen: 'tcp://127.0.0.1:0',
        provider: 'tcp',
        progress: 'loop',
        signal: stop.signal,
        log: (line) => {
          const m = /listening at (\S+)/.exec(line);
          if (m) {
            address = m[1];
            resolve();
          }
        },
      });
    });
    await listening;
    const hostile = await Endpoint.create({ provider: 'tcp' });
    try {
      const server = await hostile.connect(address, { timeout: 10_000 });
      const replies = hostile.openMailbox(CONTROL_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: 8 });
      for (let i = 0; i < 8; i++) replies.post(CONTROL_BYTES);
      const records = [
        { op: 'prepare', test: 'raw', size: 2 ** 30, count: 1, window: 4096 }, // 4 TiB of region
        { op: 'prepare', test: 'rate', size: 8, count: -1, window: 1 },
        { op: 'prepare', test: 'nope', size: 8, count: 1, window: 1 },
        { op: 'finish', expected: 'x' },
      ];
      for (const r of records) {
        const answer = replies.next({ timeout: 10_000 });
        await hostile.put(server, CONTROL_VADDR, new TextEncoder().encode(JSON.stringify(r)), { timeout: 10_000 });
        const c = await answer;
        replies.post(c.buffer);
        const reply = decode<{ op: string }>(c.buffer.subarray(0, c.bytes));
        expect(reply?.op).toBe(r.op === 'finish' ? 'done' : 'error');
      }
      // Not JSON at all: no answer, nothing breaks.
      await hostile.put(server, CONTROL_VADDR, Uint8Array.of(0xff, 0x00, 0x7b), { timeout: 10_000 });
      const report = await perfClient(address, { provider: 'tcp', progress: 'loop', tests: ['lat', 'rate'], sizes: [8], iterations: 50, warmup: 5, window: 4, timeoutMs: 10_000 });
      expect(report.results.map((r) => r.test)).toEqual(['lat', 'rate']);
    } finally {
      await hostile.close();
      stop.abort();
    }
  });
});
