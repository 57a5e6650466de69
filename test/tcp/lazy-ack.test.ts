// Lazily acknowledged puts (flag kLazyAck, CountedPutOptions.lazyAck) at the tcp receiver, spoken
// over raw sockets by a fake sender: their acks are held back but never lost. They keep the
// order of the puts, a refusal still goes at once (ending the run), a lone lazy put is answered
// by the receiver's timer with the connection left open, and a sender that stops sending gets
// every answer it is owed before the receiver closes. Late puts (kLateAck, lazyAck: 'late')
// likewise, with longer runs and a longer timer; the late flag without the lazy one is malformed.
import { type Agent, startAgent, trackChildren } from '../helpers/children';
import { PROGRESS_MODES, VADDR, uniqueNodeId } from '../helpers/endpoints';
import { FLAG_APPEND, FLAG_LATE_ACK, FLAG_LAZY_ACK, FrameType, encodeHeader, encodeHello, parseFrames, parseHello } from '../../support/tcp-wire';
import { onePerPut, rawExchange } from './raw-socket';

const BOX = VADDR + 0x20n; // on the child: ops epochs, 64 KiB buffers
const MISSING = VADDR + 0x21n; // never opened
const NO_MAILBOX = 1;

const lazyAppend = (id: bigint, fill: number, vaddr = BOX, flags = FLAG_APPEND | FLAG_LAZY_ACK): Buffer =>
  Buffer.concat([encodeHeader({ type: FrameType.Put, flags, id, vaddr, len: 8n }), Buffer.alloc(8, fill)]);
const lateAppend = (id: bigint, fill: number, vaddr = BOX): Buffer => lazyAppend(id, fill, vaddr, FLAG_APPEND | FLAG_LAZY_ACK | FLAG_LATE_ACK);

describe.each(PROGRESS_MODES)('tcp lazy acks (%s progress)', (progress) => {
  jest.setTimeout(60_000);
  const children = trackChildren('each');

  async function receiver(): Promise<Agent> {
    const agent = await startAgent(children, `receiver-${progress}`, { progress, listen: 'tcp://127.0.0.1:0' });
    await agent.child.request({ cmd: 'open', vaddr: BOX.toString(), options: { epoch: 'ops', threshold: 1000 } });
    await agent.child.request({ cmd: 'post', vaddr: BOX.toString(), size: 64 * 1024 });
    return agent;
  }

  /** Writes a hello and the frames; returns the answers after the receiver's Window frame, one per put. */
  async function exchange(agent: Agent, frames: Buffer[], end: boolean, timeoutMs: number): Promise<{ type: number; id: bigint; status: number }[]> {
    const hello = encodeHello({ nodeId: uniqueNodeId('lazy-sender'), incarnation: 1n });
    const { received } = await rawExchange(agent.address, Buffer.concat([hello, ...frames]), { end, timeoutMs });
    const theirs = parseHello(received)!;
    const { frames: answers } = parseFrames(received, theirs.size);
    expect(answers[0].type).toBe(FrameType.Window);
    return onePerPut(answers.slice(1), Buffer.concat(frames))
      .filter((f) => f.type !== FrameType.Ping) // keepalive probes of the open connection
      .map((f) => ({ type: f.type, id: f.id, status: f.status }));
  }

  const ack = (id: bigint) => ({ type: FrameType.Ack, id, status: 0 });

  test('answers keep the order of the puts, a refusal among them included; a sender that stops gets them all', async () => {
    const agent = await receiver();
    const frames = [lazyAppend(1n, 1), lazyAppend(2n, 2), lazyAppend(3n, 3, MISSING), lazyAppend(4n, 4)];
    expect(await exchange(agent, frames, true, 15_000)).toEqual([ack(1n), ack(2n), { type: FrameType.Nack, id: 3n, status: NO_MAILBOX }, ack(4n)]);
    const read = await agent.child.request({ cmd: 'read', vaddr: BOX.toString(), start: 0, end: 24 });
    expect(read.hex).toBe('01'.repeat(8) + '02'.repeat(8) + '04'.repeat(8));
  });

  test('a lone lazy put is answered with the connection left open (the receiver does not wait for company forever)', async () => {
    const agent = await receiver();
    // The connection stays open until the exchange times out: the ack can only come from the timer.
    expect(await exchange(agent, [lazyAppend(1n, 9)], false, 1500)).toEqual([ack(1n)]);
  });

  test('a run of lazy puts longer than the batch is answered without the timer or the end of the connection', async () => {
    const agent = await receiver();
    const frames = Array.from({ length: 40 }, (_, i) => lazyAppend(BigInt(i + 1), i + 1));
    // At least the first 32 (kLazyAckRun) at once, the rest by the timer: all 40 within the exchange.
    expect(await exchange(agent, frames, false, 1500)).toEqual(frames.map((_, i) => ack(BigInt(i + 1))));
  });

  test('late puts: answers keep the order, a refusal among them included, and all come with the connection left open (runs of 256, the rest by the late timer)', async () => {
    const agent = await receiver();
    const frames = [lateAppend(1n, 1), lateAppend(2n, 2, MISSING), ...Array.from({ length: 298 }, (_, i) => lateAppend(BigInt(i + 3), 3))];
    // The last answers wait for the late timer (1 s): the exchange gives them 5.
    const answers = await exchange(agent, frames, false, 5000);
    expect(answers).toEqual([ack(1n), { type: FrameType.Nack, id: 2n, status: NO_MAILBOX }, ...frames.slice(2).map((_, i) => ack(BigInt(i + 3)))]);
  });

  test('the late flag without the lazy one is malformed: the connection ends with a protocol error', async () => {
    const agent = await receiver();
    const hello = encodeHello({ nodeId: uniqueNodeId('late-sender'), incarnation: 1n });
    const { received } = await rawExchange(agent.address, Buffer.concat([hello, lazyAppend(1n, 1, BOX, FLAG_APPEND | FLAG_LATE_ACK)]), { end: false, timeoutMs: 5000 });
    const theirs = parseHello(received)!;
    const { frames } = parseFrames(received, theirs.size);
    expect(frames.map((f) => f.type)).toContain(FrameType.Error);
    expect(frames.map((f) => f.type)).not.toContain(FrameType.Ack);
  });
});
