// bench:auth's endpoints: a receiver that re-posts every buffer, and the timed connect()s and puts against it, with or without auth.
import { Endpoint, type EndpointOptions, type Mailbox, RvmaError } from '../../src';
import { measure } from '../common/lanes';
import { FIRST_VADDR, type Scenario } from '../common/protocol';
import { median, mibPerSecond } from '../common/stats';

export type Provider = 'tcp' | 'shm';
export type Auth = 'none' | 'auth';

/** Every wait (connect, put) gives up after this long. */
export const WAIT_MS = 10_000;
const SECRET = 'bench:auth shared secret, 32+ bytes long';
const MiB = 1 << 20;
const SMALL = FIRST_VADDR; // 8-byte buffers, for round trips
const LARGE = FIRST_VADDR + 1n; // 1 MiB buffers, for bandwidth
const SMALL_BUFFERS = 64;
const LARGE_BUFFERS = 16;
export const WINDOW = 4; // 1 MiB puts in flight

export function options(provider: Provider, auth: Auth, listen?: string): EndpointOptions {
  return { provider, ...(listen ? { listen } : {}), ...(auth === 'auth' ? { auth: { secret: SECRET } } : {}) };
}

/** One completion per put (ops epoch, threshold 1); each retired buffer is posted again at once. */
function repost(mailbox: Mailbox, buffers: number, size: number): void {
  for (let i = 0; i < buffers; i++) mailbox.post(size);
  void (async () => {
    try {
      for (;;) mailbox.post((await mailbox.next()).buffer);
    } catch (error) {
      if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED')) console.error('receiver:', error);
    }
  })();
}

export class Receiver {
  private constructor(private readonly endpoint: Endpoint) {}

  static async create(provider: Provider, auth: Auth, listen: string): Promise<Receiver> {
    const endpoint = await Endpoint.create(options(provider, auth, listen));
    repost(endpoint.openMailbox(SMALL, { epoch: 'ops', threshold: 1, maxBuffers: SMALL_BUFFERS }), SMALL_BUFFERS, 8);
    repost(endpoint.openMailbox(LARGE, { epoch: 'ops', threshold: 1, maxBuffers: LARGE_BUFFERS }), LARGE_BUFFERS, MiB);
    return new Receiver(endpoint);
  }

  get address(): string {
    return this.endpoint.address;
  }

  close(): Promise<void> {
    return this.endpoint.close();
  }
}

/** Median µs of `await connect()` from a fresh sender endpoint (created before, closed after the clock). */
export async function connectMicros(provider: Provider, auth: Auth, address: string, count: number, warmup: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < warmup + count; i++) {
    const sender = await Endpoint.create(options(provider, auth));
    try {
      const t0 = process.hrtime.bigint();
      await sender.connect(address, { timeout: WAIT_MS });
      const ns = Number(process.hrtime.bigint() - t0);
      if (i >= warmup) times.push(ns / 1000);
    } finally {
      await sender.close();
    }
  }
  return median(times);
}

/** Puts on one connection from a fresh sender: µs per 8-byte round trip (median), or 1 MiB MiB/s. */
export async function putMetric(
  provider: Provider,
  auth: Auth,
  address: string,
  kind: 'rtt' | 'bw',
  count: number,
  warmup: number,
): Promise<number> {
  const sender = await Endpoint.create(options(provider, auth));
  try {
    const peer = await sender.connect(address, { timeout: WAIT_MS });
    const size = kind === 'rtt' ? 8 : MiB;
    const s: Scenario = { id: kind, label: kind, kind, size, window: kind === 'rtt' ? 1 : WINDOW, count, warmup };
    const data = Buffer.alloc(size, 0xa5);
    const vaddr = kind === 'rtt' ? SMALL : LARGE;
    const m = await measure(s, () => sender.put(peer, vaddr, data, { timeout: WAIT_MS }));
    return kind === 'rtt' ? m.medianOpNs! / 1000 : mibPerSecond(m.bytes, m.elapsedNs);
  } finally {
    await sender.close();
  }
}
