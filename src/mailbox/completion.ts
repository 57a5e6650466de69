/** One ended epoch of a mailbox: which buffer retired and what it counted. */
export interface Completion {
  vaddr: bigint;
  /** The mailbox's epoch number after this completion (1 for the first). */
  epoch: number;
  /** Index of the retired buffer among all buffers posted to the mailbox (0 for the first). */
  bufferIndex: number;
  /** Bytes placed into the buffer during the epoch. */
  bytes: number;
  /** Puts placed into the buffer during the epoch. */
  ops: number;
  /** The retired buffer itself (the memory that was posted); reuse it by posting it again. */
  buffer: Uint8Array;
  /**
   * With MailboxOptions.reportSender: the node id of the last put admitted into the buffer,
   * as its connection was set up (with `auth`, authenticated). Otherwise undefined.
   */
  sender?: string;
}
