// A peer that floods frames needing an answer (Pings, refused puts) and never reads its socket:
// the endpoint stops reading from it once kMaxQueuedFrames answers wait (back-pressure), closes
// it with a protocolError when it has not read them within peerTimeoutMs, and serves other
// peers meanwhile. Before, every answer was queued: memory grew with what the peer sent.
import * as net from 'node:net';
import { type ProtocolErrorInfo } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { FrameType, HEADER_BYTES, encodeHeader, encodeHello, parseHello, splitAddress } from '../../support/tcp-wire';

jest.setTimeout(60_000);
const endpoints = trackEndpoints();

const PEER_TIMEOUT_MS = 1000;
// Far more than the kernel's socket buffers on both sides hold (a few MiB each on loopback):
// a peer that gets it all through was read from to the end.
const FLOOD_BYTES = 48 << 20;

interface Flood {
  /** Bytes the kernel took from us. */
  flushed: number;
  /** Whether the endpoint closed the connection before we were done. */
  closed: boolean;
}

/** Handshakes, stops reading, and writes chunks from `next` until FLOOD_BYTES or a close. */
async function floodWithoutReading(address: string, next: () => Buffer): Promise<Flood> {
  const { host, port } = splitAddress(address);
  const socket = net.connect({ host, port });
  socket.on('error', () => {});
  let closed = false;
  const gone = new Promise<void>((resolve) => socket.once('close', () => resolve())).then(() => (closed = true));
  let received = Buffer.alloc(0);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no hello within 15 s')), 15_000);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (parseHello(received)) {
        clearTimeout(timer);
        socket.pause(); // from here on nothing is read: the endpoint's answers pile up
        resolve();
      }
    });
  });
  await new Promise<void>((resolve) => socket.write(encodeHello({ nodeId: uniqueNodeId('flooder') }), () => resolve()));
  let flushed = 0;
  let written = 0;
  while (written < FLOOD_BYTES && !closed) {
    const chunk = next();
    written += chunk.length;
    const ok = socket.write(chunk, (error) => {
      if (!error) flushed += chunk.length;
    });
    if (!ok) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), gone]);
  }
  // Bounded: the endpoint closes within peerTimeoutMs of the pause, plus a tick.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, 15_000)));
  await Promise.race([gone, late]);
  clearTimeout(timer);
  socket.destroy();
  return { flushed, closed };
}

const FRAMES_PER_CHUNK = 1024;

/** 40 KiB of Pings, the same every time. */
function pings(): () => Buffer {
  const chunk = Buffer.concat(Array.from({ length: FRAMES_PER_CHUNK }, () => encodeHeader({ type: FrameType.Ping })));
  return () => chunk;
}

/** Empty puts into a mailbox that does not exist, each refused with a Nack; ids keep growing (a repeated one is a protocol error). */
function refusedPuts(): () => Buffer {
  let id = 1n;
  return () => {
    const chunk = Buffer.alloc(FRAMES_PER_CHUNK * HEADER_BYTES);
    for (let i = 0; i < FRAMES_PER_CHUNK; i++) {
      encodeHeader({ type: FrameType.Put, id: id++, vaddr: 0xdead0000n, len: 0n }, chunk, i * HEADER_BYTES);
    }
    return chunk;
  };
}

const FLOODS: [string, () => () => Buffer][] = [
  ['Pings', pings],
  ['refused puts', refusedPuts],
];

describe.each(PROGRESS_MODES)('a peer that never reads its answers (%s progress)', (progress) => {
  test.each(FLOODS)('flooding %s: reading stops, the connection closes typed, others are served', async (_kind, source) => {
    const victim = await endpoints.create({
      progress,
      provider: 'tcp',
      listen: 'tcp://127.0.0.1:0',
      tcp: { peerTimeoutMs: PEER_TIMEOUT_MS, keepaliveMs: 200 },
    });
    // Under thread progress the event may reach JS after the socket's close reached us.
    const refused = new Promise<ProtocolErrorInfo | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 15_000);
      victim.on('protocolError', (info: ProtocolErrorInfo) => {
        if (!/has not read its answers/.test(info.message)) return;
        clearTimeout(timer);
        resolve(info);
      });
    });
    const flood = await floodWithoutReading(victim.address, source());

    expect(flood.closed).toBe(true);
    expect(flood.flushed).toBeLessThan(FLOOD_BYTES);
    expect(await refused).toBeDefined();

    // The endpoint still serves a well-behaved peer.
    const mailbox = victim.openMailbox(VADDR, { epoch: 'bytes', threshold: 4n });
    mailbox.post(4);
    const sender = await endpoints.create({ progress, provider: 'tcp' });
    await sender.connect(victim.address, { timeout: 10_000 });
    await sender.put(victim.nodeId, VADDR, Buffer.from([1, 2, 3, 4]), { timeout: 10_000 });
    const done = await mailbox.next({ timeout: 10_000 });
    expect(Buffer.from(done.buffer.subarray(0, 4))).toEqual(Buffer.from([1, 2, 3, 4]));
  });
});
