// Sender for the mailbox and raw-write variants: puts (or raw writes) from one source buffer
// per size, each lane into its own mailbox or region slot.
import { Endpoint, type EndpointOptions, allocBuffer } from '../../src';
import { measure, type Op } from './lanes';
import { type Measurement, type Scenario, type Target, type Variant } from './protocol';

// Generous: connection setup inside the emulated Soft-RoCE guest can take seconds.
const CONNECT_TIMEOUT_MS = 30_000;

export class EndpointSender {
  private readonly sources = new Map<number, Uint8Array>();

  private constructor(
    private readonly endpoint: Endpoint,
    private readonly peer: string,
    private readonly variant: Variant,
  ) {}

  /** options: the transport and the progress mode; address: the receiver's (tcp:// or rdma://). */
  static async create(variant: Variant, options: EndpointOptions, address: string): Promise<EndpointSender> {
    const endpoint = await Endpoint.create(options);
    const peer = await endpoint.connect(address, { timeout: CONNECT_TIMEOUT_MS });
    return new EndpointSender(endpoint, peer, variant);
  }

  run(s: Scenario, target: Target): Promise<Measurement> {
    let data = this.sources.get(s.size);
    if (!data) {
      data = this.variant.source === 'native' ? allocBuffer(s.size) : Buffer.alloc(s.size);
      this.sources.set(s.size, data.fill(0xa5));
    }
    const source = data;
    const { endpoint, peer } = this;
    let op: Op;
    if (this.variant.transport === 'raw') {
      const key = BigInt(target.key!);
      op = (lane) => endpoint.rawWrite(peer, key, lane * s.size, source);
    } else {
      const vaddrs = target.vaddrs!.map((v) => BigInt(v));
      op = (lane) => endpoint.put(peer, vaddrs[lane % vaddrs.length], source, { offset: 0 });
    }
    return measure(s, op);
  }

  async close(): Promise<void> {
    await this.endpoint.close();
  }
}
