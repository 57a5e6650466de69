// `rvma perf ADDRESS`: runs tests against a perf server, as ucx_perftest or ib_write_bw do
// between two machines. Each test and size: the server gets a mailbox (or region) ready, the
// client puts (warm-up first, untimed), and the server confirms it received every put exactly.
import { Endpoint, type ProgressMode } from '../../index';
import { RvmaError } from '../../base/errors';
import { CONTROL_BYTES, CONTROL_VADDR, type ClientMessage, ECHO_VADDR, type PerfTest, type ServerMessage, decode, encode, prepareRefusal } from './protocol';

export interface PerfClientOptions {
  provider: 'auto' | 'tcp' | 'shm' | 'verbs';
  progress: ProgressMode;
  tests: PerfTest[];
  sizes: number[];
  /** Timed puts per test and size. */
  iterations: number;
  warmup: number;
  /** Puts in flight (bw, rate, raw). */
  window: number;
  /** Bound on every wait for the server. */
  timeoutMs: number;
  /** A test and size done. */
  progressed?(done: number, total: number, what: string): void;
}

export interface PerfResult {
  test: PerfTest;
  size: number;
  iterations: number;
  /** lat: one-way latency (half the round trip), µs. */
  minUs?: number;
  medianUs?: number;
  p99Us?: number;
  /** bw, raw: MiB/s; rate: puts/s. */
  mibPerSecond?: number;
  putsPerSecond?: number;
}

export interface PerfReport {
  server: { nodeId: string; provider: string; pid: number; host: string };
  client: { nodeId: string; provider: string };
  results: PerfResult[];
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export async function perfClient(address: string, o: PerfClientOptions): Promise<PerfReport> {
  // What the server would refuse, refused here before anything connects.
  for (const test of o.tests) {
    for (const size of o.sizes) {
      const refusal = prepareRefusal({ test, size, count: o.warmup + o.iterations, window: o.window });
      if (refusal) throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `rvma perf: ${refusal}`);
    }
  }
  const endpoint = await Endpoint.create({ provider: o.provider, progress: o.progress });
  try {
    const control = endpoint.openMailbox(CONTROL_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: 4 });
    for (let i = 0; i < 4; i++) control.post(CONTROL_BYTES);
    const server = await endpoint.connect(address, { timeout: o.timeoutMs });
    const ask = async <T extends ServerMessage['op']>(m: ClientMessage, want: T): Promise<Extract<ServerMessage, { op: T }>> => {
      const c = await withReply(control.next({ timeout: o.timeoutMs }), endpoint.put(server, CONTROL_VADDR, encode(m), { timeout: o.timeoutMs }));
      const reply = decode<ServerMessage>(c.buffer.subarray(0, c.bytes));
      control.post(c.buffer);
      if (reply?.op === 'error') throw new RvmaError('ERR_RVMA_PROTOCOL', `rvma perf: the server failed: ${reply.message}`);
      if (reply?.op !== want) throw new RvmaError('ERR_RVMA_PROTOCOL', `rvma perf: the server answered ${reply ? reply.op : 'something unreadable'}, not ${want}`);
      return reply as Extract<ServerMessage, { op: T }>;
    };
    const hello = await ask({ op: 'hello' }, 'hello');
    const results: PerfResult[] = [];
    const total = o.tests.length * o.sizes.length;
    for (const test of o.tests) {
      for (const size of o.sizes) {
        const count = o.warmup + o.iterations;
        const ready = await ask({ op: 'prepare', test, size, count, window: o.window }, 'ready');
        const result = await run(endpoint, server, test, size, BigInt(ready.vaddr), ready.key === undefined ? undefined : BigInt(ready.key), o);
        const done = await ask({ op: 'finish', expected: count }, 'done');
        if (done.count !== count || done.bytes !== count * size) {
          throw new RvmaError('ERR_RVMA_PROTOCOL', `rvma perf ${test} ${size} B: the server received ${done.count} puts / ${done.bytes} bytes, not ${count} / ${count * size}`);
        }
        results.push(result);
        o.progressed?.(results.length, total, `${test} ${size} B`);
      }
    }
    await endpoint.put(server, CONTROL_VADDR, encode({ op: 'bye' }), { timeout: o.timeoutMs });
    return { server: { nodeId: hello.nodeId, provider: hello.provider, pid: hello.pid, host: hello.host }, client: { nodeId: endpoint.nodeId, provider: o.provider }, results };
  } finally {
    await endpoint.close();
  }
}

/**
 * The reply to a put, waited for from before the put (so it cannot be missed); whichever of the
 * two fails first is the error, and the other's failure (the wait, rejected when its mailbox
 * closes) is handled too.
 */
async function withReply<T>(reply: Promise<T>, put: Promise<void>): Promise<T> {
  const [answer] = await Promise.all([reply, put]);
  return answer;
}

async function run(endpoint: Endpoint, server: string, test: PerfTest, size: number, vaddr: bigint, key: bigint | undefined, o: PerfClientOptions): Promise<PerfResult> {
  const data = new Uint8Array(size).fill(0x5a);
  const wait = { timeout: o.timeoutMs };
  if (test === 'lat') {
    const echo = endpoint.openMailbox(ECHO_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: 2 });
    try {
      echo.post(Math.max(1, size));
      const halfRtts: number[] = [];
      for (let i = 0; i < o.warmup + o.iterations; i++) {
        const started = process.hrtime.bigint();
        const c = await withReply(echo.next(wait), endpoint.put(server, vaddr, data, wait));
        echo.post(c.buffer);
        if (i >= o.warmup) halfRtts.push(Number(process.hrtime.bigint() - started) / 2000);
      }
      halfRtts.sort((a, b) => a - b);
      return { test, size, iterations: o.iterations, minUs: halfRtts[0], medianUs: quantile(halfRtts, 0.5), p99Us: quantile(halfRtts, 0.99) };
    } finally {
      echo.close();
    }
  }
  // bw, rate and raw: `window` in flight; the clock runs over the timed puts only.
  let started = 0n;
  const timed = async (issue: (i: number) => Promise<unknown>): Promise<number> => {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < o.warmup + o.iterations) {
        const i = next++;
        if (i === o.warmup) started = process.hrtime.bigint();
        await issue(i);
      }
    };
    await Promise.all(Array.from({ length: o.window }, lane));
    return Number(process.hrtime.bigint() - started) / 1e9;
  };
  if (test === 'bw') {
    const seconds = await timed(() => endpoint.put(server, vaddr, data, wait));
    return { test, size, iterations: o.iterations, mibPerSecond: (o.iterations * size) / 2 ** 20 / seconds };
  }
  if (test === 'raw') {
    const seconds = await timed((i) => endpoint.rawWrite(server, key!, BigInt((i % o.window) * size), data, wait));
    return { test, size, iterations: o.iterations, mibPerSecond: (o.iterations * size) / 2 ** 20 / seconds };
  }
  // rate: counted appends, at most `window` unsettled (the loop of docs/api.md).
  const counter = endpoint.createPutCounter();
  try {
    for (let i = 0; i < o.warmup + o.iterations; i++) {
      if (i === o.warmup) {
        await counter.reach(counter.issued, wait);
        started = process.hrtime.bigint();
      }
      endpoint.put(server, vaddr, data, { append: true, counter });
      if (counter.issued - counter.settled >= o.window) await counter.reach(counter.issued - o.window / 2, wait);
    }
    const { failed } = await counter.reach(counter.issued, wait);
    if (failed > 0) throw new RvmaError('ERR_RVMA_PROTOCOL', `rvma perf rate: ${failed} counted puts failed`);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { test, size, iterations: o.iterations, putsPerSecond: o.iterations / seconds };
  } finally {
    counter.close();
  }
}
