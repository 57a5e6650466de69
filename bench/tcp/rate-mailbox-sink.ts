// The receiving end of the mailbox rows: one mailbox of 64 KiB buffers that 8-byte appends
// fill, each retired buffer posted again at once; its records are counted as they retire.
import { type Endpoint, type Mailbox, RvmaError } from '../../src';
import { MAILBOX_BUFFERS, MAILBOX_BUFFER_BYTES, MESSAGE_BYTES, RECORDS_PER_BUFFER } from './rate-config';
import { type RateTally } from './rate-tally';

export class MailboxSink {
  private readonly mailbox: Mailbox;

  /**
   * A fresh mailbox (and fresh buffers) per measurement: every measurement starts on a buffer
   * boundary, and nothing a failed one left behind can land in the next.
   */
  constructor(endpoint: Endpoint, vaddr: bigint, tally: RateTally) {
    this.mailbox = endpoint.openMailbox(vaddr, { maxBuffers: MAILBOX_BUFFERS, threshold: MAILBOX_BUFFER_BYTES });
    for (let i = 0; i < MAILBOX_BUFFERS; i++) this.mailbox.post(MAILBOX_BUFFER_BYTES);
    void this.repost(tally);
  }

  get vaddr(): bigint {
    return this.mailbox.vaddr;
  }

  /**
   * Once every put is placed (the senders returned): a total that is not whole buffers leaves
   * its last records in a buffer that is not full; ending its epoch delivers them.
   */
  flush(expected: number): void {
    if (expected % RECORDS_PER_BUFFER !== 0) this.mailbox.incEpoch();
  }

  close(): void {
    this.mailbox.close();
  }

  private async repost(tally: RateTally): Promise<void> {
    try {
      for (;;) {
        const done = await this.mailbox.next();
        if (done.bytes !== done.ops * MESSAGE_BYTES) {
          throw new Error(`a completion of ${done.bytes} bytes in ${done.ops} puts: not all ${MESSAGE_BYTES}-byte records`);
        }
        this.mailbox.post(done.buffer);
        tally.add(done.ops);
      }
    } catch (error) {
      if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_CLOSED')) tally.fail(error);
    }
  }
}
