// The receiver process of the rate rows: one Endpoint (and, for the net.Socket row, one server)
// for all rows and all senders; each measurement gets a fresh mailbox or region and a reset count.
import { Endpoint, type EndpointOptions } from '../../src';
import { FIRST_VADDR, type Scenario } from '../common/protocol';
import { type RateTarget, type RowScenario } from './rate-config';
import { MailboxSink } from './rate-mailbox-sink';
import { RateNetReceiver } from './rate-net-receiver';
import { RegionSink } from './rate-region-sink';
import { type RateReceived, RateTally } from './rate-tally';

export class RateReceiver {
  private sink: MailboxSink | RegionSink | undefined;
  private nextVaddr = FIRST_VADDR;

  private constructor(
    private readonly endpoint: Endpoint,
    private readonly tally: RateTally,
    private readonly net: RateNetReceiver | undefined,
  ) {}

  /** options: the listening Endpoint's; withNet: also serve the net.Socket row. */
  static async create(options: EndpointOptions, withNet: boolean): Promise<RateReceiver> {
    const endpoint = await Endpoint.create(options);
    const tally = new RateTally();
    return new RateReceiver(endpoint, tally, withNet ? await RateNetReceiver.create(tally) : undefined);
  }

  get address(): string {
    return this.endpoint.address;
  }

  prepare(scenario: Scenario): RateTarget {
    const s = scenario as RowScenario;
    this.sink?.close();
    this.sink = undefined;
    this.tally.reset(s.senders * (s.warmup + s.count));
    switch (s.row.transport) {
      case 'net':
        if (!this.net) throw new Error('this rate receiver serves no net.Socket row');
        return { netPort: this.net.port };
      case 'raw': {
        const region = (this.sink = new RegionSink(this.endpoint, s.senders * s.window, this.tally));
        return { key: region.key.toString() };
      }
      case 'mailbox': {
        const mailbox = (this.sink = new MailboxSink(this.endpoint, this.nextVaddr++, this.tally));
        return { vaddrs: [mailbox.vaddr.toString()] };
      }
      default:
        throw new Error(`the rate receiver has no row of transport ${s.row.transport}`);
    }
  }

  /** Called once every sender returned, so every message has been placed. */
  finish(expected: number): Promise<RateReceived> {
    if (this.sink instanceof MailboxSink) this.sink.flush(expected);
    return this.tally.finish(expected);
  }

  async close(): Promise<void> {
    this.sink?.close();
    this.net?.close();
    await this.endpoint.close();
  }
}
