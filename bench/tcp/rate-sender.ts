// One sender process of the rate rows: an Endpoint connected to the receiver (and, for the
// net.Socket row, a socket to it), running whichever row each measurement names.
import { Endpoint, type EndpointOptions } from '../../src';
import { measure } from '../common/lanes';
import { type Measurement, type Scenario, type Target } from '../common/protocol';
import { MESSAGE_BYTES, type RateTarget, type RowScenario } from './rate-config';
import { measureCounted } from './rate-counted';
import { RateNetSender } from './rate-net-sender';

const CONNECT_TIMEOUT_MS = 30_000;

export class RateSender {
  private readonly source = Buffer.alloc(MESSAGE_BYTES, 0xa5);
  private net: RateNetSender | undefined;

  private constructor(
    private readonly endpoint: Endpoint,
    private readonly peer: string,
    /** This sender's place among the measurement's senders: which region slots it writes. */
    private readonly index: number,
  ) {}

  static async create(options: EndpointOptions, address: string, index: number): Promise<RateSender> {
    const endpoint = await Endpoint.create(options);
    const peer = await endpoint.connect(address, { timeout: CONNECT_TIMEOUT_MS });
    return new RateSender(endpoint, peer, index);
  }

  run(scenario: Scenario, t: Target): Promise<Measurement> {
    const s = scenario as RowScenario;
    const target = t as RateTarget;
    const { endpoint, peer, source } = this;
    const createCounter = () => endpoint.createPutCounter();
    switch (s.row.transport) {
      case 'net':
        return this.runNet(s, target.netPort!);
      case 'raw': {
        const key = BigInt(target.key!);
        const offset = (slot: number): number => (this.index * s.window + slot) * MESSAGE_BYTES;
        if (!s.row.counter) return measure(s, (lane) => endpoint.rawWrite(peer, key, offset(lane), source));
        // The last `window` issued are the ones that can be unsettled: their slots differ.
        return measureCounted(s, createCounter, (counter) =>
          endpoint.rawWrite(peer, key, offset(counter.issued % s.window), source, { counter }),
        );
      }
      case 'mailbox': {
        const vaddr = BigInt(target.vaddrs![0]);
        if (!s.row.counter) return measure(s, () => endpoint.put(peer, vaddr, source, { append: true }));
        return measureCounted(s, createCounter, (counter) => endpoint.put(peer, vaddr, source, { append: true, counter }));
      }
      default:
        throw new Error(`the rate sender has no row of transport ${s.row.transport}`);
    }
  }

  async close(): Promise<void> {
    this.net?.close();
    await this.endpoint.close();
  }

  private async runNet(s: RowScenario, port: number): Promise<Measurement> {
    const net = (this.net ??= await RateNetSender.connect(port, this.source));
    await net.send(s.warmup, s.window);
    const start = process.hrtime.bigint();
    await net.send(s.count, s.window);
    return { ops: s.count, bytes: s.count * s.size, elapsedNs: Number(process.hrtime.bigint() - start) };
  }
}
