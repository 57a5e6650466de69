// The receiving side of one ring direction against a neighbour that breaks the frame order: a
// sequence number sent twice, or beyond the credits it was given, ends the direction with a
// typed ERR_RVMA_PROTOCOL naming what was wrong. The credits it grants arrive at the sender's
// credits mailbox natively.
import { type Endpoint, type RvmaError } from '../../src';
import { frameHead } from '../../src/ring/frame';
import { Credits } from '../../src/ring/credits';
import { Inbound } from '../../src/ring/inbound';
import { VADDR, trackEndpoints } from '../helpers/endpoints';

const endpoints = trackEndpoints();
const SLOTS = 4;

interface Setup {
  sender: Endpoint;
  to: Endpoint;
  inbound: Inbound;
  broken: Promise<RvmaError>;
  /** The credits the sender has been granted, once they reach `total`; false if they never do. */
  granted: (total: number) => Promise<boolean>;
}

const CREDITS_VADDR = VADDR + 3n;

async function pollUntil(holds: () => boolean, ms = 5000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 5))) if (holds()) return true;
  return holds();
}

async function setup(): Promise<Setup> {
  const { receiver: to, sender } = await endpoints.pair('loop');
  const mailbox = to.openMailbox(VADDR, { epoch: 'ops', threshold: 1, maxBuffers: SLOTS });
  let reportBroken!: (e: RvmaError) => void;
  const broken = new Promise<RvmaError>((resolve) => (reportBroken = resolve));
  const inbound = new Inbound(mailbox, SLOTS, 64, 'test.recv', {
    broken: (e) => {
      reportBroken(e);
      inbound.fail(e);
    },
    hold: to.holdLoop,
  });
  const credits = new Credits(sender, CREDITS_VADDR);
  const base = VADDR - 1n; // the receiver's ring mailboxes, as its credits name them
  credits.expect(0, to.nodeId, base, () => undefined);
  inbound.start(to, { rank: 0, nodeId: sender.nodeId, incarnation: sender.incarnation, base: VADDR }, CREDITS_VADDR, 0, base);
  const granted = (total: number): Promise<boolean> => pollUntil(() => credits.granted(0) >= total).then((ok) => ok && credits.granted(0) === total);
  return { sender, to, inbound, broken, granted };
}

function frame(seq: number, byte: number): Uint8Array {
  const head = frameHead(seq, undefined);
  const out = new Uint8Array(head.byteLength + 8).fill(byte);
  out.set(head);
  return out;
}

describe('ring inbound: a neighbour that breaks the frame order', () => {
  test('a sequence number sent twice: ERR_RVMA_PROTOCOL "arrived twice", and receives reject with it', async () => {
    const { sender, to, inbound, broken, granted } = await setup();
    expect(await granted(SLOTS)).toBe(true);
    await sender.put(to, VADDR, frame(1, 0xa1));
    await sender.put(to, VADDR, frame(1, 0xa2));
    const error = await broken;
    expect(error.code).toBe('ERR_RVMA_PROTOCOL');
    expect(error.message).toMatch(/sequence number 1 arrived twice/);
    await expect(inbound.recv({ timeout: 1000 })).rejects.toMatchObject({ code: 'ERR_RVMA_PROTOCOL' });
  });

  test('a sequence number beyond the credits: ERR_RVMA_PROTOCOL "outside the window"', async () => {
    const { sender, to, broken } = await setup();
    await sender.put(to, VADDR, frame(SLOTS, 0xb1));
    const error = await broken;
    expect(error.code).toBe('ERR_RVMA_PROTOCOL');
    expect(error.message).toMatch(new RegExp(`sequence number ${SLOTS} outside the window \\[0, ${SLOTS}\\)`));
  });

  test('in-window frames out of order are handed out in sequence order, each once', async () => {
    const { sender, to, inbound } = await setup();
    for (const seq of [2, 0, 3, 1]) await sender.put(to, VADDR, frame(seq, 0x10 + seq));
    for (let seq = 0; seq < SLOTS; seq++) {
      const f = await inbound.recv({ timeout: 1000 });
      expect(f.seq).toBe(seq);
      expect([...f.data]).toEqual(new Array(8).fill(0x10 + seq));
      f.release();
    }
  });

  test('a frame released twice gives its buffer back once: one re-post, one credit', async () => {
    const { sender, to, inbound, granted, broken } = await setup();
    for (let seq = 0; seq < SLOTS; seq++) await sender.put(to, VADDR, frame(seq, 0x20 + seq));
    const frames = [];
    for (let seq = 0; seq < SLOTS; seq++) frames.push(await inbound.recv({ timeout: 1000 }));
    // Every buffer holds a frame: one more put finds none posted.
    await expect(sender.put(to, VADDR, frame(SLOTS, 0x30))).rejects.toMatchObject({ code: 'ERR_RVMA_NO_BUFFER' });
    const [first] = frames;
    first.release();
    first.release();
    // Every credit used: the one buffer back is granted at once, and only once.
    expect(await granted(SLOTS + 1)).toBe(true);
    await sender.put(to, VADDR, frame(SLOTS, 0x31));
    const next = await inbound.recv({ timeout: 1000 });
    expect([next.seq, next.data[0]]).toEqual([SLOTS, 0x31]);
    // One buffer came back, not two: the next frame finds none.
    await expect(sender.put(to, VADDR, frame(SLOTS + 1, 0x32))).rejects.toMatchObject({ code: 'ERR_RVMA_NO_BUFFER' });
    expect(await Promise.race([broken, 'intact'])).toBe('intact');
    for (const f of frames.slice(1)) f.release();
  });
});
