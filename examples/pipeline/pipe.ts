// The data path the pipeline's ranks use, whichever ring carries it: the rvma Ring, or the
// LEAP-style net.Socket ring it is compared with (RVMA_PIPELINE_RING=net; no control records,
// so no re-split and no recovery there).
import { type Ring } from '../../src';
import { type NetRing } from '../../support/net-ring';

export interface PipeFrame {
  readonly header: Uint8Array;
  readonly data: Uint8Array;
  release(): void;
}

export interface Pipe {
  readonly rank: number;
  readonly size: number;
  /** Resolves when the next rank has the frame (rvma) or it is written (net). */
  sendNext(header: Uint8Array, data: ArrayBufferView): Promise<void>;
  recvPrev(options?: { timeout?: number }): Promise<PipeFrame>;
}

export function ringPipe(ring: Ring): Pipe {
  return {
    get rank() {
      return ring.rank;
    },
    get size() {
      return ring.size;
    },
    sendNext: (header, data) => ring.sendNext([header, data]),
    recvPrev: (options) => ring.recvPrev(options),
  };
}

export function netPipe(net: NetRing): Pipe {
  return {
    rank: net.rank,
    size: net.size,
    sendNext: async (header, data) => net.send(header, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)),
    recvPrev: () => net.recv(),
  };
}
