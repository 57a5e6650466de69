// Receiver for the mailbox and raw-write variants. Mailbox: per message size, mailboxes with
// enough posted buffers; every completed buffer is posted again at once. Raw: per size, a
// registered region with one slot per lane; landed writes are counted.
import { Endpoint, type EndpointOptions, type Mailbox, type Region, RvmaError } from '../../src';
import { FIRST_VADDR, type Received, type Scenario, type Target, type Variant } from './protocol';
import { Tally } from './tally';

/** What the tcp provider reads per callback under loop progress (tcp_connection.cpp). */
const LOOP_READ_BUDGET = 256 << 10;

/** Completions the verbs provider handles per callback under loop progress (verbs_provider.cpp). */
const LOOP_COMPLETION_BUDGET = 16;

/**
 * Buffers posted per mailbox: enough that re-posting never falls behind, and no more, since a
 * bigger pool only makes the kernel copy into memory that has left the cache (the raw write
 * rows reuse window-many slots). Under loop progress the providers hand completions to JS
 * after every callback, and a callback places a bounded amount: tcp reads at most
 * LOOP_READ_BUDGET (a callback's worth of buffers plus two suffice), verbs handles at most
 * LOOP_COMPLETION_BUDGET completions (at most that many puts, plus two), shm places what is in
 * its ring, at most twice the sender's window of puts (plus two). Thread progress keeps
 * placing while the JS thread is descheduled for milliseconds: about 32 MiB, 8..1024 buffers.
 */
export function buffersFor(size: number, lanes: number, window: number, options: EndpointOptions): number {
  if (lanes > 1) return 4; // one put in flight per lane mailbox
  const pool = Math.max(8, Math.min(1024, Math.floor((32 << 20) / size)));
  if ((options.progress ?? 'loop') !== 'loop') return pool;
  if (options.provider === 'tcp') return Math.max(window, Math.min(16, Math.ceil(LOOP_READ_BUDGET / size) + 2));
  if (options.provider === 'verbs') return Math.min(pool, LOOP_COMPLETION_BUDGET + 2);
  // A put is acknowledged once placed, before JS has re-posted its buffer: the sender may have
  // a whole window more in flight by then (a window of 4 at 4 KiB or 2 MiB outran window + 2).
  if (options.provider === 'shm') return 2 * window + 2;
  return pool;
}

export class EndpointReceiver {
  private readonly mailboxes = new Map<string, Mailbox[]>();
  private readonly regions = new Map<string, Region>();
  private nextVaddr = FIRST_VADDR;
  private readonly tally = new Tally();

  private constructor(
    private readonly endpoint: Endpoint,
    private readonly variant: Variant,
    private readonly options: EndpointOptions,
  ) {}

  /** options: the transport, a listen address and the progress mode. */
  static async create(variant: Variant, options: EndpointOptions): Promise<EndpointReceiver> {
    return new EndpointReceiver(await Endpoint.create(options), variant, options);
  }

  get address(): string {
    return this.endpoint.address;
  }

  prepare(s: Scenario): Target {
    this.tally.reset();
    if (this.variant.transport === 'raw') return { key: this.regionFor(s).key.toString() };
    return { vaddrs: this.mailboxesFor(s) };
  }

  finish(expected: number): Promise<Received> {
    return this.tally.finish(expected);
  }

  async close(): Promise<void> {
    await this.endpoint.close();
  }

  // Stripes split one put over several connections; with a window of puts in flight their
  // parts would interleave inside one buffer. One mailbox per lane keeps each put in its own buffer.
  private mailboxesFor(s: Scenario): string[] {
    const lanes = (this.variant.stripes ?? 1) > 1 ? s.window : 1;
    const key = `${s.size}x${lanes}`;
    let set = this.mailboxes.get(key);
    if (!set) {
      set = [];
      const buffers = buffersFor(s.size, lanes, s.window, this.options);
      for (let lane = 0; lane < lanes; lane++) {
        const mailbox = this.endpoint.openMailbox(this.nextVaddr++, { maxBuffers: buffers });
        for (let i = 0; i < buffers; i++) mailbox.post(s.size);
        void this.repost(mailbox, s.size);
        set.push(mailbox);
      }
      this.mailboxes.set(key, set);
    }
    return set.map((m) => m.vaddr.toString());
  }

  private async repost(mailbox: Mailbox, size: number): Promise<void> {
    try {
      for (;;) {
        const done = await mailbox.next();
        if (done.bytes !== size) throw new Error(`completion of ${done.bytes} bytes in a ${size}-byte mailbox`);
        this.tally.add(done.bytes);
        mailbox.post(done.buffer);
      }
    } catch (error) {
      if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED')) this.tally.fail(error);
    }
  }

  private regionFor(s: Scenario): Region {
    const key = `${s.size}x${s.window}`;
    let region = this.regions.get(key);
    if (!region) {
      region = this.endpoint.registerRegion(s.size * s.window);
      void this.drain(region);
      this.regions.set(key, region);
    }
    return region;
  }

  private async drain(region: Region): Promise<void> {
    try {
      for (;;) {
        const write = await region.next();
        this.tally.add(write.bytes);
      }
    } catch (error) {
      if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED')) this.tally.fail(error);
    }
  }
}
