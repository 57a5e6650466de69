// Rank 0's side of every scenario, the same for both rings: LEAP frames out to the next rank, back
// from the previous one (checked for order), timed.
import { type Measurement, type Scenario } from '../common/protocol';
import { quantile } from '../common/stats';
import { DIM, HEADER_BYTES, RANKS, RING_WINDOW } from './config';
import { work } from './work';

/** A frame back at rank 0: views valid until release(). */
export interface LinkFrame {
  header: Uint8Array;
  data: Uint8Array;
  release(): void;
}

/** What rank 0 needs of a ring. */
export interface OriginLink {
  /** Sends [header, data] to the next rank; a promise when the ring says when the frame left. */
  send(header: Uint8Array, data: Uint8Array): Promise<void> | undefined;
  /** The next frame from the previous rank. */
  recv(): Promise<LinkFrame>;
  /** One ring.around() of a RESIZE_CHAIN; absent for the net.Socket ring. */
  around?(): Promise<void>;
}

/** The frames' float32 payload: the same values every frame (LEAP sends activations). */
function payload(): Uint8Array {
  const values = new Float32Array(DIM);
  for (let i = 0; i < DIM; i++) values[i] = i * 0.5;
  return new Uint8Array(values.buffer);
}

function header(pos: number): Uint8Array {
  const h = Buffer.allocUnsafe(HEADER_BYTES);
  h.writeUInt32LE(pos >>> 0, 0);
  h.writeUInt32LE(0, 4); // flags
  return h;
}

export class Origin {
  private readonly data = payload();
  private pos = 0;

  constructor(private readonly link: OriginLink) {}

  run(s: Scenario): Promise<Measurement> {
    if (s.id === 'hop' || s.id === 'hop-work') return this.hop(s);
    if (s.id === 'frames') return this.frames(s);
    if (s.id === 'around') return this.around(s);
    return Promise.reject(new Error(`unknown scenario ${s.id}`));
  }

  /** A frame is back: its position must be the next one and its payload intact at both ends. */
  private check(frame: LinkFrame, pos: number): void {
    const got = Buffer.from(frame.header.buffer, frame.header.byteOffset, frame.header.byteLength);
    const d = frame.data;
    const ok =
      frame.header.byteLength === HEADER_BYTES &&
      got.readUInt32LE(0) === pos >>> 0 &&
      d.byteLength === this.data.byteLength &&
      d[4] === this.data[4] &&
      d[d.byteLength - 1] === this.data[d.byteLength - 1];
    frame.release();
    if (!ok) throw new Error(`frame ${pos} came back as pos ${got.readUInt32LE(0)}, ${d.byteLength} data bytes`);
  }

  /**
   * Stop and wait: send one frame, wait for it to come round; per op a round trip / RANKS. With
   * workUs every rank works on the frame first: the forwarders' work is taken out of the time.
   */
  private async hop(s: Scenario): Promise<Measurement> {
    const workUs = s.workUs ?? 0;
    const once = async (): Promise<number> => {
      const pos = this.pos++;
      work(workUs);
      const t0 = process.hrtime.bigint();
      const back = this.link.recv();
      await this.link.send(header(pos), this.data);
      this.check(await back, pos);
      return Number(process.hrtime.bigint() - t0);
    };
    for (let i = 0; i < s.warmup; i++) await once();
    const times = new Float64Array(s.count);
    const start = process.hrtime.bigint();
    for (let i = 0; i < s.count; i++) times[i] = await once();
    const elapsedNs = Number(process.hrtime.bigint() - start);
    const rtt = { median: quantile(times, 0.5), p99: quantile(times, 0.99) };
    const worked = (RANKS - 1) * workUs * 1000;
    return {
      ops: s.count,
      bytes: s.count * s.size,
      elapsedNs,
      medianOpNs: (rtt.median - worked) / RANKS,
      p99OpNs: (rtt.p99 - worked) / RANKS,
      reported: { roundTripMedianNs: rtt.median, roundTripP99Ns: rtt.p99 },
    };
  }

  /** Pipelined: frames go out as fast as the ring takes them; timed until the last is back. */
  private async frames(s: Scenario): Promise<Measurement> {
    await this.pipeline(s.warmup);
    const start = process.hrtime.bigint();
    await this.pipeline(s.count);
    const elapsedNs = Number(process.hrtime.bigint() - start);
    return { ops: s.count, bytes: s.count * s.size, elapsedNs };
  }

  private pipeline(count: number): Promise<void> {
    const { link } = this;
    const first = this.pos;
    this.pos += count;
    let sent = 0;
    let back = 0;
    return new Promise<void>((resolve, reject) => {
      let failed = false;
      const fail = (error: unknown): void => {
        failed = true;
        reject(error);
      };
      const pump = (): void => {
        while (!failed && sent < count && sent - back < RING_WINDOW) {
          link.send(header(first + sent++), this.data)?.catch(fail);
        }
      };
      const receive = async (): Promise<void> => {
        while (back < count) {
          this.check(await link.recv(), first + back);
          back++;
          pump();
        }
      };
      receive().then(resolve, fail);
      pump();
    });
  }

  /** ring.around() of a RESIZE_CHAIN, one at a time. */
  private async around(s: Scenario): Promise<Measurement> {
    const around = this.link.around;
    if (!around) throw new Error('this ring has no around()');
    for (let i = 0; i < s.warmup; i++) await around.call(this.link);
    const times = new Float64Array(s.count);
    const start = process.hrtime.bigint();
    for (let i = 0; i < s.count; i++) {
      const t0 = process.hrtime.bigint();
      await around.call(this.link);
      times[i] = Number(process.hrtime.bigint() - t0);
    }
    return {
      ops: s.count,
      bytes: 0,
      elapsedNs: Number(process.hrtime.bigint() - start),
      medianOpNs: quantile(times, 0.5),
      p99OpNs: quantile(times, 0.99),
    };
  }
}
