// Counted puts (endpoint.createPutCounter()) between endpoints of this process, over every
// provider that carries them: puts return at once and the counter counts each exactly once,
// as completed or as failed with a typed, indexed 'failed' event; small puts are copied at
// issue; closing the counter or the endpoint never leaves a waiter hanging or a count lost.
import * as net from 'node:net';
import { type CountedPutOptions, type Endpoint, type EndpointOptions, type Mailbox, MemoryDirectory, PutCounter, type PutFailure, RvmaError, type RvmaErrorCode } from '../../src';
import { startAgent, trackChildren, waitStopped } from '../helpers/children';
import { RECORD_BYTES, RecordTally, failuresOf, issueWindowed, record, writeRecord } from '../helpers/counted';
import { asBuffer, pattern, rng } from '../helpers/data';
import { PROGRESS_MODES, VADDR, pollUntil, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectFails, expectRejects, expectThrows } from '../helpers/errors';
import { TRANSPORTS } from '../helpers/transports';

const endpoints = trackEndpoints();

const BUFFER_BYTES = 64 * 1024;
const RECORDS_PER_BUFFER = BUFFER_BYTES / RECORD_BYTES;
// About 20,000 puts, a whole number of buffers, so that every buffer fills and completes.
const MANY = 3 * RECORDS_PER_BUFFER;

/** How both endpoints of a pair reach each other. */
interface Carrier {
  options(label: string): EndpointOptions;
  /** Endpoints of this process only: the target is the Endpoint itself. */
  loopback: boolean;
  /** Whether it carries raw writes (loopback does not). */
  rawWrites: boolean;
}

const CARRIERS: [string, Carrier][] = [
  ...TRANSPORTS.map((t): [string, Carrier] => [
    t.name,
    { options: (label) => ({ provider: t.provider, listen: t.listen(label), ...t.options }), loopback: false, rawWrites: true },
  ]),
  ['loopback', { options: () => ({ provider: 'loopback' }), loopback: true, rawWrites: false }],
];
const CASES = CARRIERS.flatMap(([name, carrier]) => PROGRESS_MODES.map((p) => [name, p, carrier] as const));

/** Opens a mailbox per put, each with one buffer of exactly that put's size. */
function mailboxesFor(receiver: Endpoint, sizes: number[]): Mailbox[] {
  return sizes.map((size, i) => {
    const mailbox = receiver.openMailbox(VADDR + BigInt(i));
    mailbox.post(size);
    return mailbox;
  });
}

describe.each(CASES)('counted puts over %s (%s progress)', (_name, progress, carrier) => {
  jest.setTimeout(60_000);

  /**
   * connect false: the puts name the receiver's node id, never looked up yet, so their route
   * comes from the (shared) directory after the calls returned.
   */
  async function pair(connect = true): Promise<{ receiver: Endpoint; sender: Endpoint; target: string | Endpoint }> {
    const directory = connect ? undefined : new MemoryDirectory();
    const create = (label: string): Promise<Endpoint> =>
      endpoints.create({ nodeId: uniqueNodeId(label), progress, directory, ...carrier.options(label) });
    const receiver = await create('receiver');
    const sender = await create('sender');
    if (carrier.loopback) return { receiver, sender, target: receiver };
    if (!connect) return { receiver, sender, target: receiver.nodeId };
    expect(await sender.connect(receiver.address, { timeout: 10_000 })).toBe(receiver.nodeId);
    return { receiver, sender, target: receiver.address };
  }

  test(`${MANY} 8-byte appends into re-posted 64 KiB buffers: every record placed exactly once, counts exact`, async () => {
    const { receiver, sender, target } = await pair();
    const buffers = MANY / RECORDS_PER_BUFFER;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'bytes' }); // a buffer completes when full
    mailbox.post(BUFFER_BYTES);
    mailbox.post(BUFFER_BYTES);
    const tally = new RecordTally(1, MANY);
    const completions: { bytes: number; ops: number }[] = [];
    // Two buffers posted, three to fill: each is counted and posted again as it completes.
    const reposted: (() => void)[] = [];
    const repostedAfter = Array.from({ length: buffers }, (_, b) => new Promise<void>((resolve) => (reposted[b] = resolve)));
    const drained = (async () => {
      for (let b = 0; b < buffers; b++) {
        const done = await mailbox.next({ timeout: 30_000 });
        completions.push({ bytes: done.bytes, ops: done.ops });
        tally.add(done.buffer, done.bytes);
        done.buffer.fill(0);
        mailbox.post(done.buffer);
        reposted[b]();
      }
    })();
    drained.catch(() => {}); // awaited below, after the sender's side is checked

    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    // Copied at issue (8 bytes): one source buffer serves every put.
    const source = Buffer.alloc(RECORD_BYTES);
    let state = { completed: 0, failed: 0 };
    for (let b = 0; b < buffers; b++) {
      // Waits that the counter satisfies at once never yield to the event loop, so the receiver
      // in this process would not re-post in time: the sender waits for it before the third buffer.
      if (b >= 2) await Promise.race([repostedAfter[b - 2], drained]);
      const base = b * RECORDS_PER_BUFFER;
      state = await issueWindowed(counter, RECORDS_PER_BUFFER, (i) => {
        expect(sender.put(target, VADDR, writeRecord(source, 0, base + i), { append: true, counter })).toBeUndefined();
      });
    }
    expect(state).toEqual({ completed: MANY, failed: 0 });
    expect({ issued: counter.issued, completed: counter.completed, failed: counter.failed, settled: counter.settled }).toEqual({
      issued: MANY,
      completed: MANY,
      failed: 0,
      settled: MANY,
    });
    expect(counter.lastError).toBeUndefined();

    await drained;
    expect(failures).toEqual([]);
    expect(completions).toEqual(Array(buffers).fill({ bytes: BUFFER_BYTES, ops: RECORDS_PER_BUFFER }));
    expect({ total: tally.total, duplicates: tally.duplicates, corrupt: tally.corrupt, missing: tally.missing(0) }).toEqual({
      total: MANY,
      duplicates: 0,
      corrupt: 0,
      missing: 0,
    });
  });

  test.each([
    ['', false],
    [' (lazy acks)', true],
    [' (late acks)', 'late'],
  ] as const)('refusals are counted exactly%s: each bad put is failed once, with its code and its own index', async (_label, lazyAck) => {
    const { receiver, sender, target } = await pair();
    const count = 3000;
    const random = rng(7);
    const bad = new Set<number>();
    for (let i = 0; i < count; i++) if (random() < 0.3) bad.add(i);
    const good = count - bad.size;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(good) });
    mailbox.post(good * RECORD_BYTES);

    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    // VADDR + 1 has no mailbox.
    const state = await issueWindowed(counter, count, (i) =>
      sender.put(target, bad.has(i) ? VADDR + 1n : VADDR, record(0, i), { append: true, counter, lazyAck }),
    );
    expect(state).toEqual({ completed: good, failed: bad.size });
    expect(counter.settled).toBe(count);
    // (That the events are in before reach resolves is its own test below.)
    expect(await pollUntil(() => failures.length >= bad.size)).toBe(true);
    expect(failures).toHaveLength(bad.size);
    for (const f of failures) {
      expect(f).toMatchObject({ code: 'ERR_RVMA_NO_MAILBOX', count: 1 });
      expect(f.error).toBeInstanceOf(RvmaError);
      expect(f.error.code).toBe('ERR_RVMA_NO_MAILBOX');
    }
    expect(failures.map((f) => f.index).sort((a, b) => a - b)).toEqual([...bad].sort((a, b) => a - b));
    expect(counter.lastError).toBeInstanceOf(RvmaError);
    expect(counter.lastError!.code).toBe('ERR_RVMA_NO_MAILBOX');

    // The good ones all landed, once each, and only they were counted by the mailbox.
    const done = await mailbox.next({ timeout: 30_000 });
    expect(done).toMatchObject({ ops: good, bytes: good * RECORD_BYTES });
    const tally = new RecordTally(1, count);
    tally.add(done.buffer, done.bytes);
    expect({ total: tally.total, duplicates: tally.duplicates, corrupt: tally.corrupt }).toEqual({ total: good, duplicates: 0, corrupt: 0 });
    for (let i = 0; i < count; i++) if (tally.has(0, i) === bad.has(i)) throw new Error(`record ${i}: placed ${tally.has(0, i)}, bad ${bad.has(i)}`);
  });

  test("a refusal's 'failed' event is emitted before the reach that covers it resolves", async () => {
    const { receiver, sender, target } = await pair();
    receiver.openMailbox(VADDR).post(8);
    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    sender.put(target, VADDR + 1n, record(0, 0), { counter });
    // Where the refusal is counted natively without this thread's event loop (a progress
    // thread, or loopback as the put leaves), let that happen first, so that the native count
    // already covers the level when reach is called: the put leaves at the end of this turn,
    // then this thread sleeps 50 ms without a turn of the event loop (so the event cannot
    // come in meanwhile).
    await Promise.resolve();
    if (progress === 'thread' || carrier.loopback) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    expect(counter.failed).toBe(0); // not reported yet: reach must wait for the event
    expect(await counter.reach(1, { timeout: 30_000 })).toEqual({ completed: 0, failed: 1 });
    expect(failures.map((f) => [f.code, f.index, f.count])).toEqual([['ERR_RVMA_NO_MAILBOX', 0, 1]]);
    expect(counter.lastError?.code).toBe('ERR_RVMA_NO_MAILBOX');
  });

  test('appends into a full buffer: exactly 8 of 20 placed, the other 12 fail ERR_RVMA_OUT_OF_BOUNDS; with nothing posted, ERR_RVMA_NO_BUFFER', async () => {
    const { receiver, sender, target } = await pair();
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1_000_000n }); // never completes
    const buffer = mailbox.post(64);
    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    const state = await issueWindowed(counter, 20, (i) => sender.put(target, VADDR, record(0, i), { append: true, counter }));
    expect(state).toEqual({ completed: 8, failed: 12 });
    expect(await pollUntil(() => failures.length >= 12)).toBe(true);
    // One sender's appends are placed in order: the first eight fill the buffer.
    expect(failures.map((f) => [f.code, f.index, f.count])).toEqual(Array.from({ length: 12 }, (_, i) => ['ERR_RVMA_OUT_OF_BOUNDS', 8 + i, 1]));
    expect(asBuffer(buffer)).toEqual(Buffer.concat(Array.from({ length: 8 }, (_, i) => record(0, i))));
    expect(mailbox.epoch).toBe(0);

    receiver.openMailbox(VADDR + 1n); // open, nothing posted
    const empty = sender.createPutCounter();
    const refused = failuresOf(empty);
    expect(await issueWindowed(empty, 5, (i) => sender.put(target, VADDR + 1n, record(0, i), { append: true, counter: empty }))).toEqual({
      completed: 0,
      failed: 5,
    });
    expect(await pollUntil(() => refused.length >= 5)).toBe(true);
    expect(refused.map((f) => f.code)).toEqual(Array(5).fill('ERR_RVMA_NO_BUFFER'));
  });

  /** Puts each case (data, or [head, data]) counted, to a mailbox of its own; returns the bytes each must deliver. */
  function putEach(
    sender: Endpoint,
    target: string | Endpoint,
    receiver: Endpoint,
    cases: { head?: number; data: number }[],
    seed: number,
    afterCall: (parts: Buffer[]) => void,
    options: Omit<CountedPutOptions, 'counter'> = {},
  ): { counter: PutCounter; mailboxes: Mailbox[]; expected: Buffer[] } {
    const parts = cases.map((c, i) => (c.head ? [pattern(c.head, seed + 2 * i), pattern(c.data, seed + 2 * i + 1)] : [pattern(c.data, seed + 2 * i)]));
    const expected = parts.map((p) => Buffer.concat(p));
    const mailboxes = mailboxesFor(receiver, expected.map((e) => e.length));
    const counter = sender.createPutCounter();
    for (const [i, p] of parts.entries()) {
      sender.put(target, VADDR + BigInt(i), p.length === 2 ? [p[0], p[1]] : p[0], { counter, ...options });
      afterCall(p);
    }
    return { counter, mailboxes, expected };
  }

  async function expectDelivered(mailboxes: Mailbox[], expected: Buffer[]): Promise<void> {
    for (const [i, want] of expected.entries()) {
      const done = await mailboxes[i].next({ timeout: 30_000 });
      expect(done.bytes).toBe(want.length);
      expect(asBuffer(done.buffer).equals(want)).toBe(true);
    }
  }

  const ROUTES = [
    ['', true],
    [', the route still resolving', false],
  ] as const;

  test.each(ROUTES)('puts of up to 4096 bytes are copied at issue: overwriting the source right after the call changes nothing%s', async (_label, connect) => {
    const { receiver, sender, target } = await pair(connect);
    // [head, data] counts whole: 16 + 4080 is 4096 bytes, still copied.
    const cases = [{ data: 1 }, { data: 100 }, { data: PutCounter.COPY_MAX_BYTES }, { head: 16, data: PutCounter.COPY_MAX_BYTES - 16 }];
    const { counter, mailboxes, expected } = putEach(sender, target, receiver, cases, 100, (parts) => {
      for (const p of parts) p.fill(0xee);
    });
    expect(await counter.reach(cases.length, { timeout: 30_000 })).toEqual({ completed: cases.length, failed: 0 });
    await expectDelivered(mailboxes, expected);
  });

  test('larger puts are read where they are: left untouched until settled, they arrive intact', async () => {
    const { receiver, sender, target } = await pair();
    const cases = [{ data: PutCounter.COPY_MAX_BYTES + 1 }, { head: 16, data: PutCounter.COPY_MAX_BYTES - 15 }, { data: 64 * 1024 }, { data: 256 * 1024 }];
    const { counter, mailboxes, expected } = putEach(sender, target, receiver, cases, 300, () => {});
    expect(await counter.reach(cases.length, { timeout: 30_000 })).toEqual({ completed: cases.length, failed: 0 });
    await expectDelivered(mailboxes, expected);
  });

  test.each(ROUTES)('copy: true copies larger puts at issue too: overwriting the source right after the call changes nothing%s', async (_label, connect) => {
    const { receiver, sender, target } = await pair(connect);
    const cases = [{ data: PutCounter.COPY_MAX_BYTES + 1 }, { head: 16, data: 16 * 1024 }, { data: 256 * 1024 }];
    const { counter, mailboxes, expected } = putEach(sender, target, receiver, cases, 500, (parts) => {
      for (const p of parts) p.fill(0xee);
    }, { copy: true });
    expect(await counter.reach(cases.length, { timeout: 30_000 })).toEqual({ completed: cases.length, failed: 0 });
    await expectDelivered(mailboxes, expected);
  });

  test('copy: true in a burst larger than the transport holds at once (2 MB): each put arrives as it was at its call', async () => {
    const { receiver, sender, target } = await pair();
    const cases = Array.from({ length: 100 }, () => ({ head: 24, data: 20_000 }));
    const { counter, mailboxes, expected } = putEach(sender, target, receiver, cases, 900, (parts) => {
      for (const p of parts) p.fill(0xee);
    }, { copy: true, lazyAck: true });
    expect(await counter.reach(cases.length, { timeout: 30_000 })).toEqual({ completed: cases.length, failed: 0 });
    await expectDelivered(mailboxes, expected);
  });

  test('a stream of large in-place puts, never all settled, holds on to the memory of few of them; every byte lands', async () => {
    const { receiver, sender, target } = await pair();
    const SIZE = 5000;
    const COUNT = 2000;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'bytes', threshold: SIZE * COUNT });
    mailbox.post(SIZE * COUNT);
    const counter = sender.createPutCounter();
    const sources = Array.from({ length: COUNT }, (_, i) => pattern(SIZE, 7000 + i));
    let mostHeld = 0;
    for (let i = 0; i < COUNT; i++) {
      // Lazy acks come in runs (tcp, shm): the last puts of a stream are always unanswered.
      sender.put(target, VADDR, sources[i], { counter, offset: i * SIZE, lazyAck: true });
      mostHeld = Math.max(mostHeld, counter.heldCount);
      if (i % 64 === 63) await counter.reach(counter.issued - 64, { timeout: 30_000 });
    }
    expect(await counter.reach(COUNT, { timeout: 30_000 })).toEqual({ completed: COUNT, failed: 0 });
    expect(mostHeld).toBeLessThanOrEqual(256);
    const done = await mailbox.next({ timeout: 30_000 });
    expect(asBuffer(done.buffer).equals(Buffer.concat(sources))).toBe(true);
  });

  test.each([true, 'late'] as const)('lazyAck %s: a few puts, fewer than any batch, are all counted with no further traffic', async (lazyAck) => {
    const { receiver, sender, target } = await pair();
    const cases = [{ data: 8 }, { head: 16, data: 16 * 1024 }, { data: 100 }];
    const { counter, mailboxes, expected } = putEach(sender, target, receiver, cases, 700, () => {}, { lazyAck, copy: true });
    expect(await counter.reach(cases.length, { timeout: 30_000 })).toEqual({ completed: cases.length, failed: 0 });
    await expectDelivered(mailboxes, expected);
  });

  test('a counter closed with puts in flight leaks no counts into the next one; a reused slot starts at zero', async () => {
    const { receiver, sender, target } = await pair();
    const total = 1010;
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(total) });
    mailbox.post(total * RECORD_BYTES);
    const c1 = sender.createPutCounter();
    for (let i = 0; i < 1000; i++) sender.put(target, VADDR, record(1, i), { append: true, counter: c1 });
    c1.close();
    const c2 = sender.createPutCounter();
    for (let i = 0; i < 10; i++) sender.put(target, VADDR, record(2, i), { append: true, counter: c2 });
    expect(await c2.reach(10, { timeout: 30_000 })).toEqual({ completed: 10, failed: 0 });

    // Every put landed once; an answered put after them all means every answer is in.
    const done = await mailbox.next({ timeout: 30_000 });
    expect(done.ops).toBe(total);
    const tally = new RecordTally(3, 1000);
    tally.add(done.buffer, done.bytes);
    expect({ total: tally.total, duplicates: tally.duplicates, corrupt: tally.corrupt, c1: tally.missing(1), c2: tally.missing(2, 0, 10) }).toEqual({
      total,
      duplicates: 0,
      corrupt: 0,
      c1: 0,
      c2: 0,
    });
    receiver.openMailbox(VADDR + 1n).post(8);
    await sender.put(target, VADDR + 1n, record(0, 0), { timeout: 30_000 });
    expect({ issued: c2.issued, completed: c2.completed, failed: c2.failed, settled: c2.settled }).toEqual({ issued: 10, completed: 10, failed: 0, settled: 10 });

    const counters = Array.from({ length: 4 }, () => sender.createPutCounter());
    for (const c of counters) expect({ issued: c.issued, completed: c.completed, failed: c.failed, settled: c.settled }).toEqual({ issued: 0, completed: 0, failed: 0, settled: 0 });
  });

  test('a closed counter refuses puts synchronously with ERR_RVMA_CLOSED', async () => {
    const { receiver, sender, target } = await pair();
    receiver.openMailbox(VADDR).post(64);
    const counter = sender.createPutCounter();
    sender.put(target, VADDR, record(0, 0), { append: true, counter });
    await counter.reach(1, { timeout: 30_000 });
    counter.close();
    counter.close(); // idempotent
    expectThrows(() => sender.put(target, VADDR, record(0, 1), { append: true, counter }), 'ERR_RVMA_CLOSED');
    expect(counter.issued).toBe(1);
  });

  test('bad arguments throw ERR_RVMA_INVALID_ARGUMENT at once and count nothing', async () => {
    const { receiver, sender, target } = await pair();
    receiver.openMailbox(VADDR).post(64);
    const counter = sender.createPutCounter();
    const foreign = receiver.createPutCounter();
    const data = record(0, 0);
    const invalid = 'ERR_RVMA_INVALID_ARGUMENT';
    expectThrows(() => sender.put(target, VADDR, data, { counter: foreign }), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, timeout: 5 } as never), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, signal: new AbortController().signal } as never), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, noBufferRetryMs: 10 } as never), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, append: true, offset: 1 }), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter: {} } as never), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, offset: -1 }), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, copy: 1 } as never), invalid);
    expectThrows(() => sender.put(target, VADDR, data, { counter, lazyAck: 'yes' } as never), invalid);
    expectThrows(() => sender.put(target, 0n, data, { counter }), invalid);
    expectThrows(() => sender.put(target, VADDR, 'bytes' as never, { counter }), invalid);
    expectThrows(() => sender.rawWrite(target, 1n, 0, data, { counter, timeout: 5 } as never), invalid);
    expect(counter.issued).toBe(0);
    expect(foreign.issued).toBe(0);

    sender.put(target, VADDR, data, { append: true, counter });
    await expectFails(() => counter.reach(counter.issued + 1), invalid);
    await expectFails(() => counter.reach(-1), invalid);
    await expectFails(() => counter.reach(0.5), invalid);
    await expectFails(() => counter.reach(1, { timeout: -1 }), invalid);
    expect(await counter.reach(1, { timeout: 30_000 })).toEqual({ completed: 1, failed: 0 });
  });

  test('after endpoint.close() counted puts throw ERR_RVMA_CLOSED and no counter can be created', async () => {
    const { receiver, sender, target } = await pair();
    receiver.openMailbox(VADDR).post(64);
    const counter = sender.createPutCounter();
    await sender.close();
    expectThrows(() => sender.put(target, VADDR, record(0, 0), { append: true, counter }), 'ERR_RVMA_CLOSED');
    expectThrows(() => sender.createPutCounter(), 'ERR_RVMA_CLOSED');
    expect(counter.issued).toBe(0);
  });

  if (carrier.rawWrites) {
    test('counted raw writes: every byte lands, counts exact; an out-of-bounds one and an unknown key are counted as failed', async () => {
      const { receiver, sender } = await pair();
      const size = 64 * 1024;
      const chunk = 256;
      const region = receiver.registerRegion(size);
      const chunks = Array.from({ length: size / chunk }, (_, i) => pattern(chunk, 500 + i));
      const counter = sender.createPutCounter();
      const failures = failuresOf(counter);
      const state = await issueWindowed(counter, chunks.length, (i) =>
        expect(sender.rawWrite(receiver.address, region.key, i * chunk, chunks[i], { counter })).toBeUndefined(),
      );
      expect(state).toEqual({ completed: chunks.length, failed: 0 });
      expect(asBuffer(region.buffer).equals(Buffer.concat(chunks))).toBe(true);

      sender.rawWrite(receiver.address, region.key, size - 4, Buffer.alloc(8, 1), { counter });
      sender.rawWrite(receiver.address, region.key ^ 0x5an, 0, Buffer.alloc(8, 2), { counter });
      expect(await counter.reach(counter.issued, { timeout: 30_000 })).toEqual({ completed: chunks.length, failed: 2 });
      expect(await pollUntil(() => failures.length >= 2)).toBe(true);
      expect(failures.map((f) => [f.code, f.index, f.count])).toEqual([
        ['ERR_RVMA_OUT_OF_BOUNDS', chunks.length, 1],
        ['ERR_RVMA_NO_MAILBOX', chunks.length + 1, 1],
      ]);
      expect(asBuffer(region.buffer).equals(Buffer.concat(chunks))).toBe(true);
    });
  }
});

/** A tcp server on 127.0.0.1 that accepts connections and never answers: puts to it cannot settle. */
async function silentServer(): Promise<{ address: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `tcp://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The failure codes the library documents for puts to a peer that died. */
const DEAD_PEER_CODES: RvmaErrorCode[] = ['ERR_RVMA_PEER_LOST', 'ERR_RVMA_NO_PEER'];

describe.each(PROGRESS_MODES)('counted puts over tcp that cannot settle (%s progress)', (progress) => {
  jest.setTimeout(60_000);
  const children = trackChildren('each');
  let silent: { address: string; close(): Promise<void> } | undefined;

  afterEach(async () => {
    await silent?.close();
    silent = undefined;
  });

  /** A tcp endpoint whose handshake with the silent server does not give up during the test. */
  async function patientSender(): Promise<Endpoint> {
    return endpoints.create({ nodeId: uniqueNodeId('sender'), progress, provider: 'tcp', tcp: { connectTimeoutMs: 600_000 } });
  }

  test('reach rejects ERR_RVMA_TIMEOUT and ERR_RVMA_ABORTED while the puts go on; endpoint.close() fails them all in one event', async () => {
    silent = await silentServer();
    const sender = await patientSender();
    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    for (let i = 0; i < 50; i++) sender.put(silent.address, VADDR, record(0, i), { append: true, counter });
    // A large one too: held by the library until the close settles it.
    sender.put(silent.address, VADDR + 1n, pattern(64 * 1024, 1), { counter });
    const issued = counter.issued;

    await expectRejects(counter.reach(issued, { timeout: 50 }), 'ERR_RVMA_TIMEOUT');
    const controller = new AbortController();
    const aborted = counter.reach(1, { signal: controller.signal });
    controller.abort();
    await expectRejects(aborted, 'ERR_RVMA_ABORTED');
    const already = new AbortController();
    already.abort();
    await expectRejects(counter.reach(1, { signal: already.signal }), 'ERR_RVMA_ABORTED');
    expect({ issued: counter.issued, settled: counter.settled, failures: failures.length }).toEqual({ issued: 51, settled: 0, failures: 0 });

    const waiting = counter.reach(issued, { timeout: 30_000 });
    await sender.close();
    expect({ completed: counter.completed, failed: counter.failed, settled: counter.settled }).toEqual({ completed: 0, failed: issued, settled: issued });
    expect(await waiting).toEqual({ completed: 0, failed: issued });
    expect(await counter.reach(issued, { timeout: 30_000 })).toEqual({ completed: 0, failed: issued });
    // One event for all of them, emitted by close() itself.
    expect(failures.map((f) => [f.code, f.index, f.count])).toEqual([['ERR_RVMA_CLOSED', -1, issued]]);
    expect(failures[0].error).toBeInstanceOf(RvmaError);
    expect(counter.lastError?.code).toBe('ERR_RVMA_CLOSED');
  });

  test('counter.close(): waits in reach reject ERR_RVMA_CLOSED, puts throw it; the puts in flight are still reported', async () => {
    silent = await silentServer();
    const sender = await patientSender();
    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    for (let i = 0; i < 20; i++) sender.put(silent.address, VADDR, record(0, i), { append: true, counter });
    const first = counter.reach(20, { timeout: 30_000 });
    const second = counter.reach(5);
    counter.close();
    await expectRejects(first, 'ERR_RVMA_CLOSED');
    await expectRejects(second, 'ERR_RVMA_CLOSED');
    expectThrows(() => sender.put(silent!.address, VADDR, record(0, 20), { append: true, counter }), 'ERR_RVMA_CLOSED');
    expect(counter.issued).toBe(20);
    await sender.close();
    expect(counter.failed).toBe(20);
    expect(failures.map((f) => [f.code, f.index, f.count])).toEqual([['ERR_RVMA_CLOSED', -1, 20]]);
  });

  test('a receiver process killed mid-stream: every put settles, completed + failed === issued, failures typed as a dead peer', async () => {
    const agent = await startAgent(children, 'receiver', { progress: 'loop', listen: 'tcp://127.0.0.1:0' });
    const v = VADDR.toString();
    await agent.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1e9 } });
    await agent.child.request({ cmd: 'post', vaddr: v, size: 16 << 20 });
    const sender = await endpoints.create({ nodeId: uniqueNodeId('sender'), progress, provider: 'tcp' });
    expect(await sender.connect(agent.address, { timeout: 10_000 })).toBe(agent.nodeId);

    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    const KILL_AFTER = 5000; // placed before the kill
    const HELD = 16; // on the connection, unanswered, when the kill comes
    const AFTER_KILL = 5000; // issued after it
    const put = (seq: number): void => sender.put(agent.address, VADDR, record(0, seq), { append: true, counter });
    expect(await issueWindowed(counter, KILL_AFTER, put)).toEqual({ completed: KILL_AFTER, failed: 0 });
    // A window provably in flight: the receiver is frozen, the puts are handed to the native
    // side at once, and a connect to the same address is answered only after them (one queue,
    // in order) on the same live connection. Counting unsettled puts in JS cannot prove this:
    // their answers may be on their way.
    agent.child.signal('SIGSTOP');
    await waitStopped(agent.child.pid);
    for (let seq = KILL_AFTER; seq < KILL_AFTER + HELD; seq++) put(seq);
    expect(await sender.connect(agent.address, { timeout: 10_000 })).toBe(agent.nodeId);
    expect(counter.settled).toBe(KILL_AFTER);
    // Puts keep flowing while the child dies.
    agent.child.signal('SIGKILL');
    await issueWindowed(counter, AFTER_KILL, (i) => put(KILL_AFTER + HELD + i));
    await agent.child.waitExit();

    const state = await counter.reach(counter.issued, { timeout: 30_000 });
    expect(state.completed + state.failed).toBe(counter.issued);
    expect(counter.settled).toBe(counter.issued);
    expect(state.completed).toBe(KILL_AFTER);
    expect(state.failed).toBe(HELD + AFTER_KILL);
    expect(await pollUntil(() => sumCounts(failures) >= state.failed)).toBe(true);
    expect(sumCounts(failures)).toBe(state.failed);
    const indices = failures.map((f) => f.index);
    expect(new Set(indices).size).toBe(indices.length);
    expect(indices.every((i) => i >= 0 && i < counter.issued)).toBe(true);
    const codes = [...new Set(failures.map((f) => f.code))].sort();
    expect(DEAD_PEER_CODES).toEqual(expect.arrayContaining(codes));
    // The puts in flight when the connection broke are the peer's loss.
    expect(codes).toContain('ERR_RVMA_PEER_LOST');
    const lostHeld = failures.filter((f) => f.code === 'ERR_RVMA_PEER_LOST' && f.index >= KILL_AFTER && f.index < KILL_AFTER + HELD);
    expect(sumCounts(lostHeld)).toBe(HELD);
  });
});

function sumCounts(failures: PutFailure[]): number {
  return failures.reduce((n, f) => n + f.count, 0);
}
