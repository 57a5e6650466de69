// The credits this member's two senders may use, received natively (native/ring/ring_credits.h):
// the neighbours' credit records land in a mailbox of their own and are checked there (the right
// neighbour, the right direction); the native senders (openSender) read the totals there, as
// JS may from shared words. A Notify comes only while a send waits for a credit.
import { type Endpoint } from '../mailbox/endpoint';
import { type Mailbox } from '../mailbox/mailbox';
import { type NativeEndpoint, native } from '../native';
import { type RingCounts } from './options';
import { CREDITS_BLOCK_BYTES, CREDITS_TAKEN_WORD, CREDITS_WORDS_BYTES, DIRS_WORD, DIR_FRAME_BYTES, DIR_GRANTED, DIR_WAITING, DIR_WORDS, readSharedU64 } from './slab';

/** 0: the frames this member sends to next; 1: to prev. */
export type CreditDir = 0 | 1;
/** Credit records are recycled natively as they arrive: a few buffers hold any burst. */
const CREDIT_BUFFERS = 16;
const TWO_32 = 2 ** 32;

export class Credits {
  private readonly mailbox: Mailbox;
  private readonly words: Uint32Array;
  private readonly handle: NativeEndpoint;
  private readonly listeners: (() => void)[] = [];
  /** Records taken (mod 2^32) when last counted. */
  private counted = 0;

  constructor(endpoint: Endpoint, vaddr: bigint) {
    // The transport names each record's sender: credits count only from the neighbour of their direction.
    this.mailbox = endpoint.openAt('Ring.join', vaddr, { epoch: 'ops', threshold: 1, maxBuffers: CREDIT_BUFFERS, reportSender: true }, true);
    const block = new Uint8Array(native().allocBuffer(CREDITS_BLOCK_BYTES));
    this.words = new Uint32Array(block.buffer, block.byteOffset, CREDITS_WORDS_BYTES / 4);
    try {
      this.handle = this.mailbox.claim(block, (handle, id) => handle.ringCreditsOpen(id, vaddr, block), () => this.listeners.forEach((l) => l()));
    } catch (error) {
      this.mailbox.close();
      throw error;
    }
  }

  /**
   * Credits of `dir` count from now on, only from `nodeId`'s instance whose ring mailboxes are at
   * `base`; `onCredit` runs when one comes while a send waits.
   */
  expect(dir: CreditDir, nodeId: string, base: bigint, onCredit: () => void): void {
    this.handle.ringCreditsExpect(this.mailbox.id, dir, nodeId, base);
    this.listeners.push(onCredit);
  }

  /**
   * Only the neighbours' puts from now on: a stranger's records never count, but its puts
   * could hold the few buffers the neighbours' credits need (a credit lost there is not sent again).
   */
  allowOnly(nodeIds: string[]): void {
    if (!this.mailbox.closed) this.mailbox.setAllow(nodeIds);
  }

  /**
   * The native sending side of `dir`, paced by these credits: frames to `peer`'s frame mailbox at
   * `vaddr` (that incarnation only; 0n: any). Its id for ringSend, or -status.
   */
  openSender(dir: CreditDir, peer: string, incarnation: bigint, vaddr: bigint): number {
    return this.handle.ringOutOpen(this.mailbox.id, dir, peer, incarnation, vaddr);
  }

  /** The frames `dir` may have sent in all, as published in the shared words. */
  granted(dir: CreditDir): number {
    return readSharedU64(this.words, DIRS_WORD + DIR_WORDS * dir + DIR_GRANTED);
  }

  /** The native endpoint the senders run on. */
  get native(): NativeEndpoint {
    return this.handle;
  }

  /** The largest frame the receiver of `dir` takes (0 before its first credit). */
  frameBytes(dir: CreditDir): number {
    return Atomics.load(this.words, DIRS_WORD + DIR_WORDS * dir + DIR_FRAME_BYTES);
  }

  /** A send of `dir` waits: the next credit for it sends a Notify. Try the send again after. */
  waitFor(dir: CreditDir): void {
    Atomics.store(this.words, DIRS_WORD + DIR_WORDS * dir + DIR_WAITING, 1);
  }

  /** Adds the records taken since the last call to counts. */
  count(counts: RingCounts): void {
    const taken = Atomics.load(this.words, CREDITS_TAKEN_WORD);
    counts.creditRecordsReceived += (taken - this.counted + TWO_32) % TWO_32;
    this.counted = taken;
  }

  close(): void {
    this.mailbox.close();
  }
}
