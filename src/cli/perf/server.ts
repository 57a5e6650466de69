// `rvma perf --server`: an endpoint that takes perf clients' tests. For each test the client
// asks for, it opens a mailbox (or registers a region for raw writes), counts what arrives,
// echoes latency puts back, and says what it received when the client asks.
import * as os from 'node:os';
import { Endpoint, type Mailbox, type ProgressMode, type Region } from '../../index';
import { CONTROL_BYTES, CONTROL_VADDR, type ClientMessage, DATA_VADDR, ECHO_VADDR, type PrepareRequest, type ServerMessage, decode, encode, prepareRefusal } from './protocol';

export interface PerfServerOptions {
  listen: string;
  provider: 'auto' | 'tcp' | 'shm' | 'verbs';
  progress: ProgressMode;
  /** Return after the first client said goodbye. */
  once?: boolean;
  /** Where to say what happens (the listen address first). */
  log(line: string): void;
  signal?: AbortSignal;
}

/** A test under way: what arrived, and how to end it. */
interface Running {
  count: number;
  bytes: number;
  close(): void;
}

/** Runs until aborted (or, with once, until the first client leaves). */
export async function perfServer(o: PerfServerOptions): Promise<void> {
  const endpoint = await Endpoint.create({ listen: o.listen, provider: o.provider, progress: o.progress });
  let tests = 0;
  let running: Running | undefined;
  const control = endpoint.openMailbox(CONTROL_VADDR, { epoch: 'ops', threshold: 1, maxBuffers: 16, reportSender: true });
  for (let i = 0; i < 16; i++) control.post(CONTROL_BYTES);
  o.log(`rvma perf: server listening at ${endpoint.address} (node ${endpoint.nodeId}, ${o.provider} provider, ${o.progress} progress)`);
  const aborted = new Promise<void>((resolve) => o.signal?.addEventListener('abort', () => resolve(), { once: true }));
  try {
    for (;;) {
      const c = await Promise.race([control.next(), aborted.then(() => undefined)]);
      if (!c) return;
      const message = decode<ClientMessage>(c.buffer.subarray(0, c.bytes));
      control.post(c.buffer);
      const client = c.sender;
      if (!message || !client) continue;
      const reply = (m: ServerMessage): Promise<void> => endpoint.put(client, CONTROL_VADDR, encode(m), { timeout: 10_000 });
      try {
        switch (message.op) {
          case 'hello':
            o.log(`rvma perf: client ${client} connected`);
            await reply({ op: 'hello', nodeId: endpoint.nodeId, provider: o.provider, pid: process.pid, host: os.hostname() });
            break;
          case 'prepare': {
            running?.close();
            running = undefined;
            const refusal = prepareRefusal(message as unknown as Record<string, unknown>);
            if (refusal) throw new Error(`prepare: ${refusal}`);
            const vaddr = DATA_VADDR + BigInt(tests++);
            const { test, key } = prepare(endpoint, client, vaddr, message);
            running = test;
            await reply({ op: 'ready', vaddr: vaddr.toString(), ...(key === undefined ? {} : { key: key.toString() }) });
            break;
          }
          case 'finish': {
            // The client saw its puts answered; their completions may still be on their way up here.
            for (const end = Date.now() + SETTLE_MS; running && running.count < message.expected && Date.now() < end; ) await sleep(2);
            const done = { op: 'done' as const, count: running?.count ?? 0, bytes: running?.bytes ?? 0 };
            running?.close();
            running = undefined;
            await reply(done);
            break;
          }
          case 'bye':
            o.log(`rvma perf: client ${client} done`);
            if (o.once) return;
            break;
        }
      } catch (error) {
        await reply({ op: 'error', message: (error as Error).message }).catch(() => undefined);
      }
    }
  } finally {
    running?.close();
    await endpoint.close();
  }
}

/** How long a finish waits for completions the client has seen answered. */
const SETTLE_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens what the test puts into and starts counting (lat: echoing too). */
function prepare(endpoint: Endpoint, client: string, vaddr: bigint, r: PrepareRequest): { test: Running; key?: bigint } {
  if (r.test === 'raw') {
    const region: Region = endpoint.registerRegion(r.size * r.window, { allow: [client] });
    const state = { count: 0, bytes: 0, close: () => region.close() };
    void (async () => {
      for (;;) {
        const w = await region.next();
        state.count++;
        state.bytes += w.bytes;
      }
    })().catch(() => undefined); // ends when the region closes
    return { test: state, key: region.key };
  }
  if (r.test === 'rate') {
    // Appends into one buffer that holds them all: one completion at the end, counting each put.
    const mailbox = endpoint.openMailbox(vaddr, { epoch: 'ops', threshold: BigInt(r.count), allow: [client] });
    mailbox.post(Math.max(1, r.count * r.size));
    const state = { count: 0, bytes: 0, close: () => mailbox.close() };
    void mailbox.next().then((c) => {
      state.count = c.ops;
      state.bytes = c.bytes;
    }, () => undefined);
    return { test: state };
  }
  // lat and bw: one put per buffer, each posted again once taken (lat: once echoed).
  const mailbox: Mailbox = endpoint.openMailbox(vaddr, { epoch: 'ops', threshold: 1, maxBuffers: 2 * r.window + 2, allow: [client] });
  for (let i = 0; i < 2 * r.window + 2; i++) mailbox.post(Math.max(1, r.size));
  const state = { count: 0, bytes: 0, close: () => mailbox.close() };
  void (async () => {
    for (;;) {
      const c = await mailbox.next();
      state.count++;
      state.bytes += c.bytes;
      if (r.test === 'lat') await endpoint.put(client, ECHO_VADDR, c.buffer.subarray(0, c.bytes), { timeout: 10_000 });
      mailbox.post(c.buffer);
    }
  })().catch(() => undefined); // ends when the mailbox closes
  return { test: state };
}
