// Handshake refusals, both directions, over raw sockets: a listening endpoint that gets a
// bad hello answers with an Error frame, closes, and emits 'protocolError'; an endpoint that
// dials a server answering with a bad hello fails connect()/put() with a typed error.
import { type EventEmitter } from 'node:events';
import * as net from 'node:net';
import { Endpoint, type ProtocolErrorInfo } from '../../src';
import { PROGRESS_MODES, VADDR, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { FrameType, HELLO_BYTES, type HelloFields, MAGIC, VERSION, encodeHello, parseFrames, parseHello } from '../../support/tcp-wire';
import { rawExchange } from './raw-socket';

/** Collects an emitter's events and waits (bounded) for the next one. */
function collect<T>(emitter: EventEmitter, name: string): { seen: T[]; next(timeoutMs?: number): Promise<T> } {
  const seen: T[] = [];
  let taken = 0;
  let wake: (() => void) | undefined;
  emitter.on(name, (value: T) => {
    seen.push(value);
    wake?.();
  });
  return {
    seen,
    async next(timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (seen.length <= taken) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no '${name}' event within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      return seen[taken++];
    },
  };
}

interface FakeConnection {
  data: Buffer;
  /** Settles once the peer closed the connection (or it failed). */
  closed: Promise<void>;
}

/** A TCP server that greets every connection with `greeting` and records what it receives. */
async function fakeServer(greeting: Buffer | undefined): Promise<{ address: string; connections: FakeConnection[]; close(): Promise<void> }> {
  const connections: FakeConnection[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const record: FakeConnection = {
      data: Buffer.alloc(0),
      closed: new Promise<void>((resolve) => socket.on('close', () => resolve())),
    };
    connections.push(record);
    socket.on('data', (chunk) => {
      record.data = Buffer.concat([record.data, chunk]);
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    if (greeting) socket.write(greeting);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `tcp://127.0.0.1:${port}`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Resolves with `promise`, or rejects after timeoutMs. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<T>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The refusal is decided on the 32-byte fixed part, so only that part is sent: the refusing
 * side has then read every byte it was sent and closes gracefully (FIN). Bytes arriving
 * after its close would make its kernel answer with a reset, which may discard the Error
 * frame before the other side reads it.
 */
function fixedPart(hello: HelloFields): Buffer {
  return encodeHello(hello).subarray(0, HELLO_BYTES);
}

const BAD_HELLOS: { name: string; hello: HelloFields; text: RegExp }[] = [
  { name: 'the next protocol version', hello: { nodeId: 'raw-next', version: VERSION + 1 }, text: new RegExp(`unsupported protocol version.*${VERSION + 1}`) },
  { name: 'the previous protocol version', hello: { nodeId: 'raw-previous', version: VERSION - 1 }, text: /unsupported protocol version/ },
  { name: 'wrong magic', hello: { nodeId: 'raw-magic', magic: 0x50545448 }, text: /wrong magic/ },
  { name: 'a zero-length node id', hello: { nodeId: '', nodeIdLen: 0 }, text: /malformed/ },
  { name: 'a nonzero reserved byte', hello: { nodeId: 'raw-reserved', reservedByte: 7 }, text: /malformed/ },
  { name: 'an unknown flag', hello: { nodeId: 'raw-flag', flags: 2 }, text: /malformed/ },
];

describe.each(PROGRESS_MODES)('tcp handshake refusals (%s progress)', (progress) => {
  const open: Endpoint[] = [];
  const servers: { close(): Promise<void> }[] = [];

  afterEach(async () => {
    await Promise.all(open.splice(0).map((e) => e.close()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function endpoint(options: Parameters<typeof Endpoint.create>[0] = {}): Promise<Endpoint> {
    const e = await Endpoint.create({ nodeId: uniqueNodeId('hs'), progress, ...options });
    open.push(e);
    return e;
  }

  test.each(BAD_HELLOS)('a peer whose hello has $name gets an Error frame, the connection closes, protocolError fires', async ({ hello, text }) => {
    const listener = await endpoint({ listen: 'tcp://127.0.0.1:0' });
    const errors = collect<ProtocolErrorInfo>(listener, 'protocolError');
    const exchange = await rawExchange(listener.address, fixedPart(hello), { timeoutMs: 15_000 });
    expect(exchange.how).toBe('end'); // closed by the endpoint, neither reset nor left hanging

    // The endpoint greets first (before reading ours), then explains, then closes.
    const greeting = parseHello(exchange.received);
    expect(greeting).toMatchObject({ magic: MAGIC, version: VERSION, nodeId: listener.nodeId, address: listener.address });
    const { frames, rest } = parseFrames(exchange.received, greeting!.size);
    expect(rest).toBe(0);
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ type: FrameType.Error, flags: 0, status: 0, parts: 0 });
    expect(frames[0].text).toMatch(/^handshake refused: /);
    expect(frames[0].text).toMatch(text);

    const info = await errors.next();
    // Who it was is not asserted: before a valid hello the endpoint knows no node id for an
    // accepted connection.
    expect(typeof info.peer).toBe('string');
    expect(info.message).toBe(frames[0].text);

    // Refusing one peer costs nothing else: a real endpoint still connects and puts.
    const mailbox = listener.openMailbox(VADDR);
    mailbox.post(4);
    const sender = await endpoint({ provider: 'tcp' });
    await sender.put(listener.address, VADDR, Buffer.from('good'), { timeout: 15_000 });
    expect(Buffer.from((await mailbox.next({ timeout: 15_000 })).buffer).toString()).toBe('good');
    expect(errors.seen).toHaveLength(1);
  });

  test('a hello of the next version split into single bytes is refused the same way', async () => {
    const listener = await endpoint({ listen: 'tcp://127.0.0.1:0' });
    const errors = collect<ProtocolErrorInfo>(listener, 'protocolError');
    const hello = fixedPart({ nodeId: 'trickle', version: VERSION + 1 });
    const { port } = new URL(listener.address.replace('tcp:', 'http:'));
    const socket = net.connect({ host: '127.0.0.1', port: Number(port) });
    socket.on('error', () => {});
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    for (const byte of hello) {
      await new Promise<void>((resolve) => socket.write(Buffer.from([byte]), () => resolve()));
    }
    const info = await errors.next();
    expect(info.message).toMatch(/unsupported protocol version/);
    let timer: NodeJS.Timeout | undefined;
    const bounded = new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the endpoint did not close the connection')), 15_000);
    });
    try {
      await Promise.race([closed, bounded]);
    } finally {
      clearTimeout(timer);
      socket.destroy();
    }
    expect(errors.seen).toHaveLength(1);
    const received = Buffer.concat(chunks);
    const greeting = parseHello(received)!;
    expect(parseFrames(received, greeting.size).frames.map((f) => f.type)).toEqual([FrameType.Error]);
  });

  test.each([
    { name: 'the next protocol version', hello: { nodeId: 'fake-next', version: VERSION + 1 }, text: /unsupported protocol version/ },
    { name: 'wrong magic', hello: { nodeId: 'fake-magic', magic: 0x2f505448 }, text: /wrong magic/ },
  ])('a server answering with $name: connect() and put() reject with ERR_RVMA_PEER_LOST and protocolError fires', async ({ hello, text }) => {
    const server = await fakeServer(fixedPart(hello));
    servers.push(server);
    const dialer = await endpoint();
    const errors = collect<ProtocolErrorInfo>(dialer, 'protocolError');

    const refused = await expectRejects(dialer.connect(server.address, { timeout: 15_000 }), 'ERR_RVMA_PEER_LOST');
    expect(refused.message).toMatch(text);
    const info = await errors.next();
    expect(info.peer).toBe(server.address);
    expect(info.message).toMatch(/^handshake refused: /);
    expect(info.message).toMatch(text);

    // A put to the address dials again and fails the same way; nothing is left hanging.
    await expectRejects(dialer.put(server.address, VADDR, Buffer.from('x'), { timeout: 15_000 }), 'ERR_RVMA_PEER_LOST');
    expect((await errors.next()).peer).toBe(server.address);

    // What the server saw on the first connection, once the endpoint closed it: our hello,
    // then an Error frame.
    await within(server.connections[0].closed, 15_000, 'the endpoint closing the refused connection');
    const first = server.connections[0].data;
    const ours = parseHello(first);
    expect(ours).toMatchObject({ magic: MAGIC, version: VERSION, nodeId: dialer.nodeId });
    const { frames } = parseFrames(first, ours!.size);
    expect(frames.map((f) => f.type)).toEqual([FrameType.Error]);
    expect(frames[0].text).toMatch(text);
  });

  test('a server that accepts but never says hello: connect() rejects with ERR_RVMA_NO_PEER after connectTimeoutMs', async () => {
    const server = await fakeServer(undefined);
    servers.push(server);
    const dialer = await endpoint({ tcp: { connectTimeoutMs: 300 } });
    const errors = collect<ProtocolErrorInfo>(dialer, 'protocolError');
    await expectRejects(dialer.connect(server.address, { timeout: 15_000 }), 'ERR_RVMA_NO_PEER');
    await expectRejects(dialer.put(server.address, VADDR, Buffer.from('x'), { timeout: 15_000 }), 'ERR_RVMA_NO_PEER');
    expect(errors.seen).toEqual([]); // silence is not a protocol error
  });
});
