// Once a connection has failed, none of its remaining input is processed. Each case writes, in
// one write, a valid hello, frames that break the protocol, then more frames behind them (a
// Ping, a put): the receiver (a child process, so a crash is a failed test, not a dead jest
// worker) must report one protocolError, answer nothing after its Error frame, count nothing,
// and keep serving everyone else.
import { Endpoint } from '../../src';
import { type Agent, startAgent, trackChildren } from '../helpers/children';
import { PROGRESS_MODES, VADDR, uniqueNodeId } from '../helpers/endpoints';
import { FrameType, type Header, PART_EXT_BYTES, encodeHeader, encodeHello, parseFrames, parseHello } from '../../support/tcp-wire';
import { onePerPut, rawExchange } from './raw-socket';

const TARGET = VADDR + 0x10n; // on the child: one 64 KiB buffer, ops epoch that ends at the first put
const BUFFER_BYTES = 64 * 1024;

function part(id: bigint, parts: number, offset: bigint, len: number, putOffset: bigint, putLen: bigint, fill: number): Buffer {
  const ext = Buffer.alloc(PART_EXT_BYTES);
  ext.writeBigUInt64LE(putOffset, 0);
  ext.writeBigUInt64LE(putLen, 8);
  const head: Header = { type: FrameType.Put, parts, id, vaddr: TARGET, offset, len: BigInt(len) };
  return Buffer.concat([encodeHeader(head), ext, Buffer.alloc(len, fill)]);
}

const ping = (): Buffer => encodeHeader({ type: FrameType.Ping });
const wholePut = (id: bigint, len: number): Buffer =>
  Buffer.concat([encodeHeader({ type: FrameType.Put, id, vaddr: TARGET, offset: 0n, len: BigInt(len) }), Buffer.alloc(len, 7)]);

/** Frames that break the protocol, each followed by input that must never be processed. */
const cases: { name: string; frames: Buffer[]; acked: number }[] = [
  {
    // The reported crash: two parts carry 200 bytes for a 100-byte put.
    name: 'parts that carry more bytes than their put',
    frames: [part(1n, 2, 0n, 100, 0n, 100n, 1), part(1n, 2, 0n, 100, 0n, 100n, 2), ping()],
    acked: 1,
  },
  {
    name: 'every part in without covering the put',
    frames: [part(2n, 2, 0n, 30, 0n, 100n, 1), part(2n, 2, 0n, 30, 0n, 100n, 2), ping(), wholePut(3n, 8)],
    acked: 1,
  },
  {
    name: 'a bad frame header behind staged frames',
    frames: [Buffer.alloc(40, 0xff), ping(), wholePut(4n, 8)],
    acked: 0,
  },
  {
    name: 'an answer for a put never sent',
    frames: [encodeHeader({ type: FrameType.Ack, id: 99n }), wholePut(5n, 8), ping()],
    acked: 0,
  },
];

describe.each(PROGRESS_MODES)('a failed tcp connection processes nothing more (%s progress)', (progress) => {
  const children = trackChildren('each');
  let good: Endpoint | undefined;

  afterEach(async () => {
    await good?.close();
    good = undefined;
  });

  async function receiver(): Promise<Agent> {
    const agent = await startAgent(children, `receiver-${progress}`, { progress, listen: 'tcp://127.0.0.1:0' });
    const v = TARGET.toString();
    await agent.child.request({ cmd: 'open', vaddr: v, options: { epoch: 'ops', threshold: 1 } });
    await agent.child.request({ cmd: 'post', vaddr: v, size: BUFFER_BYTES });
    return agent;
  }

  test.each(cases)('$name', async ({ frames, acked }) => {
    const agent = await receiver();
    const hello = encodeHello({ nodeId: uniqueNodeId('evil') });
    const { received, how } = await rawExchange(agent.address, Buffer.concat([hello, ...frames]), { timeoutMs: 15_000 });
    expect(how).not.toBe('timeout');

    // The receiver's hello and window, Acks of what was valid before the violation, then one
    // Error frame, last: the Ping and the put behind the violation got no answer.
    const theirs = parseHello(received)!;
    const { frames: spoken, rest } = parseFrames(received, theirs.size);
    expect(rest).toBe(0);
    const answers = onePerPut(spoken, Buffer.concat(frames));
    expect(answers.map((f) => f.type)).toEqual([FrameType.Window, ...Array(acked).fill(FrameType.Ack), FrameType.Error]);
    const report = await agent.child.next('protocolError', 15_000);
    expect(report.message).toBe(answers[answers.length - 1].text);

    // Alive, nothing counted from the hostile connection, and still serving others.
    expect(agent.child.hasExited).toBe(false);
    expect(await agent.child.request({ cmd: 'status', vaddr: TARGET.toString() })).toMatchObject({ epoch: 0 });
    good = await Endpoint.create({ nodeId: uniqueNodeId('good'), progress });
    await good.put(agent.address, TARGET, Buffer.from('survived'), { offset: 0n, timeout: 15_000 });
    const done = await agent.child.request({ cmd: 'next', vaddr: TARGET.toString(), hashBytes: 8 });
    expect(done).toMatchObject({ epoch: 1, ops: 1 }); // the first epoch: nothing counted before
    expect((await agent.child.request({ cmd: 'read', vaddr: TARGET.toString(), start: 0, end: 8 })).hex).toBe(
      Buffer.from('survived').toString('hex'),
    );
  });
});
