// Without auth a node id is a claim: a second endpoint claiming the id of a connected node,
// as another incarnation, is refused while that node's connection lives, so puts meant for the
// node never reach it; once the node is gone the claim is believed again (docs/security.md).
import { createHash } from 'node:crypto';
import { Endpoint, type ProtocolErrorInfo } from '../../src';
import { ChildCommandError, startAgent, trackChildren } from '../helpers/children';
import { expectRejects } from '../helpers/errors';
import { FrameType, encodeHello, parseFrames } from '../../support/tcp-wire';
import { RawPeer } from '../tcp/raw-socket';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';

jest.setTimeout(60_000);
const endpoints = trackEndpoints();
const children = trackChildren();

const PROVIDERS = ['tcp', 'shm'] as const;

function listenAt(provider: (typeof PROVIDERS)[number]): string {
  return provider === 'tcp' ? 'tcp://127.0.0.1:0' : `shm://${uniqueNodeId('victim')}`;
}

describe.each(PROVIDERS)('an impostor over %s', (provider) => {
  test.each(PROGRESS_MODES)('is refused while the real node is connected, and believed once it is gone (%s progress)', async (progress) => {
    const victim = await endpoints.create({ progress, provider, listen: listenAt(provider) });
    const refusals: ProtocolErrorInfo[] = [];
    victim.on('protocolError', (info: ProtocolErrorInfo) => refusals.push(info));
    const lost = new Promise<void>((resolve) => victim.on('peerLost', () => resolve()));
    const id = uniqueNodeId('real');
    const real = await Endpoint.create({ nodeId: id, progress, provider });
    const mailbox = real.openMailbox(VADDR, { epoch: 'ops', threshold: 1n, maxBuffers: 16 });
    for (let i = 0; i < 10; i++) mailbox.post(8);
    await real.connect(victim.address, { timeout: 10_000 });

    // Another process: one process refuses a second endpoint of the same id itself.
    const impostor = await startAgent(children, 'impostor', { nodeId: id, progress, provider });
    await impostor.child.request({ cmd: 'open', vaddr: VADDR.toString(), options: { epoch: 'ops', threshold: '1' } });
    await impostor.child.request({ cmd: 'post', vaddr: VADDR.toString(), size: 8 });
    const refused = await impostor.child.request({ cmd: 'connect', address: victim.address, timeout: 10_000 }).then(
      () => undefined,
      (error: ChildCommandError) => error,
    );
    expect(refused).toBeInstanceOf(ChildCommandError);
    expect(refused!.code).toMatch(/^ERR_RVMA_/);
    // The tcp dialer reads why in the Error frame; an shm dialer sees its connection closed.
    expect(refused!.message).toMatch(provider === 'tcp' ? /connected already as another incarnation/ : /closed/);
    await expectEventually(() => refusals.some((r) => /connected already as another incarnation/.test(r.message)));

    // Every put meant for the node reaches the node.
    for (let i = 0; i < 10; i++) await victim.put(id, VADDR, Buffer.alloc(8, i), { timeout: 10_000 });
    for (let i = 0; i < 10; i++) {
      const done = await mailbox.next({ timeout: 10_000 });
      expect(done.buffer[0]).toBe(i);
    }
    expect((await impostor.child.request({ cmd: 'status', vaddr: VADDR.toString() })).epoch).toBe(0);

    await real.close();
    await lost;
    await impostor.child.request({ cmd: 'connect', address: victim.address, timeout: 10_000 });
    // The impostor's connect resolves on its side; a put of its, placed here, shows the victim
    // has its side up too (under thread progress the victim's worker may still be reading the hello).
    const inbox = victim.openMailbox(VADDR + 1n, { epoch: 'ops', threshold: 1n });
    inbox.post(8);
    await impostor.child.request({ cmd: 'put', target: victim.nodeId, vaddr: (VADDR + 1n).toString(), size: 8 });
    await inbox.next({ timeout: 10_000 });
    // A put by id goes to the incarnation it was resolved to: the first one after the swap
    // finds that one gone, the next resolves the id again.
    await expectRejects(victim.put(id, VADDR, Buffer.alloc(8, 6), { timeout: 10_000 }), 'ERR_RVMA_PEER_LOST');
    await victim.put(id, VADDR, Buffer.alloc(8, 7), { timeout: 10_000 });
    const taken = await impostor.child.request({ cmd: 'next', vaddr: VADDR.toString(), hashBytes: 8 });
    expect(taken.sha256).toBe(createHash('sha256').update(Buffer.alloc(8, 7)).digest('hex'));
  });
});

async function expectEventually(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// The incarnation is in every hello, so an impostor may claim it too: over tcp it must then
// come from the node's host. 127.0.0.2 stands in for another host.
test.each(PROGRESS_MODES)('over tcp, a connection claiming a connected node and its incarnation from another host is refused (%s progress)', async (progress) => {
  const victim = await endpoints.create({ progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
  const real = await endpoints.create({ progress, provider: 'tcp' });
  await real.connect(victim.address, { timeout: 10_000 });
  const { peer, hello } = await RawPeer.connect(victim.address, 15_000, '127.0.0.2');
  await peer.write(encodeHello({ nodeId: real.nodeId, incarnation: BigInt(`0x${real.incarnation}`) }));
  const error = await peer.until((all) => parseFrames(all, hello.size).frames.find((f) => f.type === FrameType.Error));
  expect(error?.text).toMatch(/connected already from 127\.0\.0\.1/);
  expect(await peer.end()).not.toBe('timeout');
  // The real node is untouched.
  const mailbox = real.openMailbox(VADDR, { epoch: 'bytes', threshold: 2n });
  mailbox.post(2);
  await victim.put(real.nodeId, VADDR, Buffer.from('ok'), { timeout: 10_000 });
  expect(Buffer.from((await mailbox.next({ timeout: 10_000 })).buffer).toString()).toBe('ok');
});
