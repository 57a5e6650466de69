// One rank of the rvma ring as an application sets it up: an Endpoint over tcp or shm with the
// Redis directory and Ring.join; forwarders send each frame on in place and pass around() records.
import { Endpoint, type ProgressMode, RedisDirectory, Ring, RvmaError, type ShmOptions } from '../../src';
import { FRAME_BYTES, RANKS, RESIZE_CHAIN } from './config';
import { type LinkFrame, type OriginLink } from './origin';
import { work } from './work';

export interface RvmaRankOptions {
  provider: 'tcp' | 'shm';
  progress: ProgressMode;
  shm?: ShmOptions;
  url: string;
  cluster: string;
  group: string;
  rank: number;
}

const JOIN_TIMEOUT_MS = 60_000;

export class RvmaRank implements OriginLink {
  private constructor(
    readonly ring: Ring,
    private readonly endpoint: Endpoint,
    private readonly directory: RedisDirectory,
  ) {}

  static async join(o: RvmaRankOptions): Promise<RvmaRank> {
    const directory = await RedisDirectory.connect({ url: o.url, namespace: o.cluster });
    const listen = o.provider === 'tcp' ? 'tcp://127.0.0.1:0' : `shm://rvma-bench-ring-${process.pid}`;
    const endpoint = await Endpoint.create({ listen, provider: o.provider, progress: o.progress, shm: o.shm, directory });
    const ring = await Ring.join(endpoint, { group: o.group, size: RANKS, rank: o.rank, frameBytes: FRAME_BYTES, timeout: JOIN_TIMEOUT_MS });
    return new RvmaRank(ring, endpoint, directory);
  }

  send(header: Uint8Array, data: Uint8Array): Promise<void> {
    return this.ring.sendNext([header, data]);
  }

  recv(): Promise<LinkFrame> {
    return this.ring.recvPrev();
  }

  around(): Promise<void> {
    return this.ring.around(RESIZE_CHAIN);
  }

  /** µs of work on each frame before it is passed on (the hop-work scenario). */
  workUs = 0;

  /** Forwards every frame from prev to next until the ring closes; counted once sent. */
  async forwardFrames(forwarded: (bytes: number) => void, failed: (error: unknown) => void): Promise<void> {
    try {
      for (;;) {
        const frame = await this.ring.recvPrev();
        work(this.workUs);
        const bytes = frame.header.byteLength + frame.data.byteLength;
        this.ring.sendNext([frame.header, frame.data]).then(
          () => {
            frame.release();
            forwarded(bytes);
          },
          (error: unknown) => {
            frame.release();
            failed(error);
          },
        );
      }
    } catch (error) {
      if (!this.closedBy(error)) failed(error);
    }
  }

  /** Applies (here: counts) every around() record and passes it on, until the ring closes. */
  async passControl(passed: () => void, failed: (error: unknown) => void): Promise<void> {
    try {
      for (;;) {
        const message = await this.ring.control();
        await message.pass();
        passed();
      }
    } catch (error) {
      if (!this.closedBy(error)) failed(error);
    }
  }

  async close(): Promise<void> {
    await this.ring.close();
    await this.endpoint.close();
    await this.directory.close();
  }

  private closedBy(error: unknown): boolean {
    return this.ring.closed || (error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED');
  }
}
