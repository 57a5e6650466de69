// The receiving end of the raw-write rows: a registered region with one 8-byte slot per write
// in flight per sender; every write that lands is counted through region.next().
import { type Endpoint, type Region, RvmaError } from '../../src';
import { MESSAGE_BYTES } from './rate-config';
import { type RateTally } from './rate-tally';

export class RegionSink {
  private readonly region: Region;

  /** A fresh region per measurement, so writes a failed one left behind cannot count in the next. */
  constructor(endpoint: Endpoint, slots: number, tally: RateTally) {
    this.region = endpoint.registerRegion(slots * MESSAGE_BYTES);
    void this.drain(tally);
  }

  get key(): bigint {
    return this.region.key;
  }

  close(): void {
    this.region.close();
  }

  private async drain(tally: RateTally): Promise<void> {
    try {
      for (;;) {
        const write = await this.region.next();
        if (write.bytes !== MESSAGE_BYTES) throw new Error(`a raw write of ${write.bytes} bytes, expected ${MESSAGE_BYTES}`);
        tally.add(1);
      }
    } catch (error) {
      if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED')) tally.fail(error);
    }
  }
}
