// The receiver's side of puts sent again after a broken connection, spoken over raw sockets
// (support/tcp-wire.ts) by a fake sender that reconnects as the same node and incarnation: a
// put id the receiver already settled is answered with its first outcome (Ack, or the same
// Nack status) and counted once; a put below the sender's floor, or one the receiver no
// longer remembers, is refused with status 12 (ERR_RVMA_AMBIGUOUS) rather than placed twice;
// the window keeps its name while it lives, so a sender can tell when it may send again.
import { type Agent, startAgent, trackChildren } from '../helpers/children';
import { PROGRESS_MODES, VADDR, uniqueNodeId } from '../helpers/endpoints';
import { FrameType, type Header, encodeHeader, encodeHello, parseFrames, parseHello } from '../../support/tcp-wire';
import { onePerPut, rawExchange } from './raw-socket';

const BOX = VADDR + 0x20n; // on the child: ops epochs of EPOCH_OPS puts, 64 KiB buffers
const LATE = VADDR + 0x21n; // on the child: opened only during a test
const EPOCH_OPS = 1000;
const MAX_OUTCOMES = 16384; // PutWindow::kMaxOutcomes
const AMBIGUOUS = 12;
const NO_MAILBOX = 1;

const put = (id: bigint, fill: number, vaddr = BOX, len = 8): Buffer =>
  Buffer.concat([encodeHeader({ type: FrameType.Put, id, vaddr, offset: BigInt(fill) * 8n, len: BigInt(len) }), Buffer.alloc(len, fill)]);
const append = (id: bigint, fill: number, len = 8): Buffer =>
  Buffer.concat([encodeHeader({ type: FrameType.Put, flags: 1, id, vaddr: BOX, len: BigInt(len) }), Buffer.alloc(len, fill)]);
const floor = (value: bigint): Buffer => encodeHeader({ type: FrameType.Floor, id: value });

interface Answer {
  type: number;
  id: bigint;
  status: number;
}

describe.each(PROGRESS_MODES)('tcp receiver de-duplication (%s progress)', (progress) => {
  const children = trackChildren('each');

  async function receiver(tcp: Record<string, number> = {}): Promise<Agent> {
    const agent = await startAgent(children, `receiver-${progress}`, { progress, listen: 'tcp://127.0.0.1:0', tcp });
    await agent.child.request({ cmd: 'open', vaddr: BOX.toString(), options: { epoch: 'ops', threshold: EPOCH_OPS } });
    await agent.child.request({ cmd: 'post', vaddr: BOX.toString(), size: 64 * 1024 });
    return agent;
  }

  const windows = new Map<Agent, bigint[]>();

  /**
   * One connection as (nodeId, incarnation): writes the frames, half-closes, returns the
   * answers. The receiver's Window frame comes first; its name is kept in `windows`.
   */
  async function connection(agent: Agent, nodeId: string, incarnation: bigint, frames: Buffer[]): Promise<Answer[]> {
    const hello = encodeHello({ nodeId, incarnation });
    const { received, how } = await rawExchange(agent.address, Buffer.concat([hello, ...frames]), { end: true, timeoutMs: 15_000 });
    expect(how).not.toBe('timeout');
    const theirs = parseHello(received)!;
    const { frames: answers, rest } = parseFrames(received, theirs.size);
    expect(rest).toBe(0);
    expect(answers[0]).toMatchObject({ type: FrameType.Window, status: 0, vaddr: 0n, offset: 0n, len: 0n });
    expect(answers[0].id).not.toBe(0n);
    windows.set(agent, [...(windows.get(agent) ?? []), answers[0].id]);
    return onePerPut(answers.slice(1), Buffer.concat(frames)).map((f) => ({ type: f.type, id: f.id, status: f.status }));
  }

  const ack = (id: bigint): Answer => ({ type: FrameType.Ack, id, status: 0 });
  const nack = (id: bigint, status: number): Answer => ({ type: FrameType.Nack, id, status });

  async function appendOffset(agent: Agent): Promise<string> {
    return (await agent.child.request({ cmd: 'read', vaddr: BOX.toString(), start: 0, end: 64 })).hex as string;
  }

  test('a put sent again over a new connection is answered as the first time and counted once', async () => {
    const agent = await receiver();
    const node = uniqueNodeId('resender');
    expect(await connection(agent, node, 7n, [append(1n, 0xa1), append(2n, 0xa2), put(3n, 4, LATE)])).toEqual([
      ack(1n),
      ack(2n),
      nack(3n, NO_MAILBOX),
    ]);
    // The mailbox opens meanwhile: the re-sent put 3 still gets its first answer, and only the
    // new put 4 lands (after the two appends, each placed once).
    await agent.child.request({ cmd: 'open', vaddr: LATE.toString() });
    await agent.child.request({ cmd: 'post', vaddr: LATE.toString(), size: 64 });
    expect(await connection(agent, node, 7n, [append(2n, 0xa2), append(1n, 0xa1), put(3n, 4, LATE), append(4n, 0xa4)])).toEqual([
      ack(2n),
      ack(1n),
      nack(3n, NO_MAILBOX),
      ack(4n),
    ]);
    const placed = Buffer.concat([Buffer.alloc(8, 0xa1), Buffer.alloc(8, 0xa2), Buffer.alloc(8, 0xa4), Buffer.alloc(40)]);
    expect(await appendOffset(agent)).toBe(placed.toString('hex'));
    // Another incarnation of the node is another sender: its put 1 is new.
    expect(await connection(agent, node, 8n, [append(1n, 0xb1)])).toEqual([ack(1n)]);
    expect((await appendOffset(agent)).slice(48, 64)).toBe(Buffer.alloc(8, 0xb1).toString('hex'));
    expect(await agent.child.request({ cmd: 'status', vaddr: BOX.toString() })).toMatchObject({ epoch: 0 });
  });

  test('below the floor a put is refused as ambiguous; at or above it, settled ones are answered, new ones placed', async () => {
    const agent = await receiver();
    const node = uniqueNodeId('floored');
    expect(await connection(agent, node, 1n, [append(1n, 1), append(2n, 2), append(3n, 3), floor(3n)])).toEqual([
      ack(1n),
      ack(2n),
      ack(3n),
    ]);
    expect(await connection(agent, node, 1n, [append(2n, 2), append(3n, 3), append(5n, 5)])).toEqual([
      nack(2n, AMBIGUOUS),
      ack(3n),
      ack(5n),
    ]);
    const placed = Buffer.concat([1, 2, 3, 5].map((b) => Buffer.alloc(8, b)));
    expect((await appendOffset(agent)).slice(0, 64)).toBe(placed.toString('hex'));
  });

  test('a window keeps its name across the connections of its sender; one made anew (reconnectMs 0: none is kept) gets another', async () => {
    const keeping = await receiver();
    const node = uniqueNodeId('named');
    await connection(keeping, node, 1n, [append(1n, 1)]);
    await connection(keeping, node, 1n, [append(1n, 1)]);
    await connection(keeping, node, 2n, [append(1n, 2)]); // another incarnation, another window
    const [a, b, c] = windows.get(keeping)!;
    expect(b).toBe(a);
    expect(c).not.toBe(a);

    const forgetting = await receiver({ reconnectMs: 0 });
    expect(await connection(forgetting, node, 1n, [append(1n, 1)])).toEqual([ack(1n)]);
    // The window went with the connection: a put sent again would be placed again, so a
    // sender that sees the new name does not send it (a raw one here does, to show why).
    expect(await connection(forgetting, node, 1n, [append(1n, 1)])).toEqual([ack(1n)]);
    const [first, second] = windows.get(forgetting)!;
    expect(second).not.toBe(first);
  });

  test(`beyond ${MAX_OUTCOMES} remembered outcomes the oldest are forgotten: their re-sends are refused as ambiguous`, async () => {
    const agent = await receiver();
    await agent.child.request({ cmd: 'open', vaddr: LATE.toString(), options: { epoch: 'ops', threshold: 1e9 } });
    await agent.child.request({ cmd: 'post', vaddr: LATE.toString(), size: 64 });
    const node = uniqueNodeId('chatty');
    const count = MAX_OUTCOMES + 100;
    // Zero-length puts: each is remembered, none takes room.
    const many = Array.from({ length: count }, (_, i) => encodeHeader({ type: FrameType.Put, id: BigInt(i + 1), vaddr: LATE, offset: 0n, len: 0n } as Header));
    const first = await connection(agent, node, 1n, many);
    expect(first).toHaveLength(count);
    expect(first.every((a, i) => a.type === FrameType.Ack && a.id === BigInt(i + 1))).toBe(true);
    const again = await connection(agent, node, 1n, [put(1n, 0, LATE, 0), put(BigInt(count), 0, LATE, 0)]);
    expect(again).toEqual([nack(1n, AMBIGUOUS), ack(BigInt(count))]);
  });

  test('the same put id twice on one connection is a protocol error', async () => {
    const agent = await receiver();
    const answers = await connection(agent, uniqueNodeId('twice'), 1n, [append(1n, 1), append(1n, 1)]);
    expect(answers.map((a) => a.type)).toEqual([FrameType.Ack, FrameType.Error]);
    expect((await agent.child.next('protocolError', 15_000)).message).toMatch(/sent twice on one connection/);
  });
});
