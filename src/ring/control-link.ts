// The around() records to the next rank (AROUND and ACK): counted puts, copied as they are sent
// and acknowledged late, like frames, so a record costs no promise, no timer and no wake-up of
// its own. The last RETAINED records are kept by their index so that a refused one can be told
// apart and sent again (a neighbour whose application is behind refuses with ERR_RVMA_NO_BUFFER).
import { type Endpoint } from '../mailbox/endpoint';
import { type RvmaError } from '../base/errors';
import { type PutCounter, type PutFailure } from '../mailbox/put-counter';

/** Refusals come back at once, so a record is looked up well within this many later ones. */
const RETAINED = 256;

export class ControlLink {
  private readonly counter: PutCounter;
  private readonly counted: { counter: PutCounter; copy: true; lazyAck: 'late' };
  private readonly retained: (Uint8Array | undefined)[] = new Array(RETAINED);

  constructor(
    private readonly endpoint: Endpoint,
    private readonly peer: string,
    private readonly vaddr: bigint,
    /** A record failed; bytes is the record, unless too many were sent since to tell which. */
    refused: (error: RvmaError, bytes: Uint8Array | undefined) => void,
  ) {
    this.counter = endpoint.createPutCounter();
    this.counted = { counter: this.counter, copy: true, lazyAck: 'late' };
    this.counter.on('failed', (f: PutFailure) => {
      const known = f.count === 1 && f.index >= 0 && this.counter.issued - f.index <= RETAINED;
      refused(f.error, known ? this.retained[f.index % RETAINED] : undefined);
    });
  }

  send(bytes: Uint8Array): void {
    this.retained[this.counter.issued % RETAINED] = bytes;
    this.endpoint.put(this.peer, this.vaddr, bytes, this.counted);
  }

  /** Records in flight still settle; their failures are still reported. */
  close(): void {
    this.counter.close();
  }
}
