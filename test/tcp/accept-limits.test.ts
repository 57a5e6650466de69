// What connections that never finish their handshake can take from a listening endpoint:
// out of descriptors its accept loop rests instead of spinning a CPU and takes peers again
// once descriptors free up; maxConnections and maxHandshakes bound what idle connections
// hold; and an idle connection costs no 64 KiB staging buffer before its hello.
import * as net from 'node:net';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { startAgent, trackChildren } from '../helpers/children';
import { expectRejects } from '../helpers/errors';
import { expectRestingAtLimit, usage } from '../helpers/usage';
import { encodeHello, splitAddress } from '../../support/tcp-wire';

jest.setTimeout(90_000);
const endpoints = trackEndpoints();
const children = trackChildren();

interface Idle {
  socket: net.Socket;
  closed: boolean;
}

const idle: Idle[] = [];
afterEach(() => {
  for (const c of idle.splice(0)) c.socket.destroy();
});

/** A connection that says nothing; `closed` turns true when the endpoint closes it. */
async function openIdle(address: string): Promise<Idle> {
  const { host, port } = splitAddress(address);
  const socket = net.connect({ host, port });
  const c: Idle = { socket, closed: false };
  socket.on('error', () => {});
  socket.on('close', () => (c.closed = true));
  socket.resume(); // reads (and drops) the endpoint's hello, so its close is seen
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', resolve);
  });
  idle.push(c);
  return c;
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(PROGRESS_MODES)('accepting under pressure (%s progress)', (progress) => {
  test('out of descriptors, the accept loop rests instead of spinning, and accepts again once they free up', async () => {
    // The child may hold 64 descriptors: idle connections use up the rest.
    const victim = await startAgent(
      children,
      'victim',
      { progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0', tcp: { connectTimeoutMs: 60_000, maxHandshakes: 1000 } },
      ['prlimit', '--nofile=64:64', '--'],
    );
    await victim.child.request({ cmd: 'open', vaddr: VADDR.toString(), options: { epoch: 'bytes', threshold: '4' } });
    await victim.child.request({ cmd: 'post', vaddr: VADDR.toString(), size: 4 });
    const before = usage(victim);
    const conns: Idle[] = [];
    for (let i = 0; i < 64 - before.fds + 20; i++) conns.push(await openIdle(victim.address));
    // Connections past the limit wait in the kernel's backlog: the listener stays readable.
    await expectRestingAtLimit(victim, 64);

    for (const c of conns) c.socket.destroy();
    const sender = await endpoints.create({ progress, provider: 'tcp' });
    await sender.connect(victim.address, { timeout: 20_000 });
    await sender.put(victim.nodeId, VADDR, Buffer.from('abcd'), { timeout: 20_000 });
    const done = await victim.child.request({ cmd: 'next', vaddr: VADDR.toString() });
    expect(done.bytes).toBe(4);
  });

  test('out of descriptors, lazy acks still go out: their timer exists from the start', async () => {
    const victim = await startAgent(
      children,
      'victim',
      { progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0', tcp: { connectTimeoutMs: 60_000, maxHandshakes: 1000 } },
      ['prlimit', '--nofile=64:64', '--'],
    );
    await victim.child.request({ cmd: 'open', vaddr: VADDR.toString(), options: { epoch: 'ops', threshold: '1', maxBuffers: 16 } });
    for (let i = 0; i < 8; i++) await victim.child.request({ cmd: 'post', vaddr: VADDR.toString(), size: 8 });
    const sender = await endpoints.create({ progress, provider: 'tcp' });
    await sender.put(victim.address, VADDR, Buffer.alloc(8, 1), { timeout: 20_000 }); // connected, answered eagerly
    for (let i = 0; i < 64; i++) await openIdle(victim.address);
    await new Promise((r) => setTimeout(r, 300));
    expect(usage(victim).fds).toBeGreaterThanOrEqual(63);
    // Fewer than a lazy run: their acks go when the victim's lazy-ack timer fires, and only then.
    const counter = sender.createPutCounter();
    for (let i = 0; i < 5; i++) sender.put(victim.nodeId, VADDR, Buffer.alloc(8, 2 + i), { counter, lazyAck: true });
    const state = await counter.reach(5, { timeout: 10_000 });
    expect(state).toEqual({ completed: 5, failed: 0 });
  });

  test('past maxHandshakes the oldest handshake is closed, so a real peer still gets in', async () => {
    const victim = await endpoints.create({
      progress,
      provider: 'tcp',
      listen: 'tcp://127.0.0.1:0',
      tcp: { maxHandshakes: 4, connectTimeoutMs: 60_000 },
    });
    const conns: Idle[] = [];
    for (let i = 0; i < 10; i++) {
      conns.push(await openIdle(victim.address));
      // One at a time, so the endpoint sees them in order.
      await until(`connection ${i} accepted`, () => conns.filter((c) => !c.closed).length === Math.min(i + 1, 4));
    }
    expect(conns.map((c) => c.closed)).toEqual([true, true, true, true, true, true, false, false, false, false]);

    const mailbox = victim.openMailbox(VADDR, { epoch: 'bytes', threshold: 4n });
    mailbox.post(4);
    const sender = await endpoints.create({ progress, provider: 'tcp' });
    await sender.put(victim.address, VADDR, Buffer.from('abcd'), { timeout: 20_000 });
    expect((await mailbox.next({ timeout: 10_000 })).bytes).toBe(4);
    // It took the place of the oldest idle one.
    await until('the oldest idle connection closed', () => conns[6].closed);
    expect(conns.slice(7).map((c) => c.closed)).toEqual([false, false, false]);
  });

  test('past maxConnections a new connection is closed at once, and a peer connects once one leaves', async () => {
    const victim = await endpoints.create({
      progress,
      provider: 'tcp',
      listen: 'tcp://127.0.0.1:0',
      tcp: { maxConnections: 3, connectTimeoutMs: 60_000 },
    });
    const conns = [await openIdle(victim.address), await openIdle(victim.address), await openIdle(victim.address)];
    const extra = await openIdle(victim.address);
    await until('the connection over the limit closed', () => extra.closed);
    expect(conns.map((c) => c.closed)).toEqual([false, false, false]);

    const sender = await endpoints.create({ progress, provider: 'tcp', tcp: { connectTimeoutMs: 2000 } });
    // Closed before its hello was read: the dialer sees the end of the stream, or a reset if
    // its hello reached the closed socket first.
    await expectRejects(sender.connect(victim.address, { timeout: 10_000 }), 'ERR_RVMA_PEER_LOST', /closed|reset/);

    conns[0].socket.destroy();
    await new Promise((r) => setTimeout(r, 200)); // its close reaches the endpoint
    const mailbox = victim.openMailbox(VADDR, { epoch: 'bytes', threshold: 4n });
    mailbox.post(4);
    await sender.put(victim.address, VADDR, Buffer.from('abcd'), { timeout: 20_000 });
    expect((await mailbox.next({ timeout: 10_000 })).bytes).toBe(4);
  });
});

test.each([
  ['before its hello', false],
  ['after it, until it carries data', true],
])('an idle connection holds no 64 KiB staging buffer %s', async (_when, hello) => {
  const victim = await startAgent(children, 'victim', {
    provider: 'tcp',
    listen: 'tcp://127.0.0.1:0',
    tcp: { connectTimeoutMs: 60_000, maxHandshakes: 2000, maxConnections: 2000 },
  });
  const before = usage(victim);
  for (let i = 0; i < 1000; i++) {
    const c = await openIdle(victim.address);
    if (hello) c.socket.write(encodeHello({ nodeId: uniqueNodeId('idle') }));
  }
  await until('1000 connections accepted', () => idle.every((c) => !c.closed));
  await new Promise((r) => setTimeout(r, 500));
  const after = usage(victim);
  expect(after.fds - before.fds).toBe(1000);
  // 64 KiB each would be 64 MiB: what is left is a few KiB each, and the heap's own noise.
  expect(after.rssBytes - before.rssBytes).toBeLessThan(24 << 20);
});
