// Peer authentication on the wire, spoken by hand over raw sockets: the proofs are computed
// here independently of the native code (test/tcp/raw-socket.ts authProof), so these tests pin the
// documented bytes, and play the attacks the handshake must defeat: a recorded handshake
// replayed, an acceptor's proof reflected back at it, a node id claimed without the secret,
// frames sent in place of a proof.
import { randomBytes } from 'node:crypto';
import { type AuthFailedInfo, type Endpoint } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { FrameType, HELLO_AUTH, PROOF_BYTES, encodeHeader, encodeHello, parseFrames, parseHello } from '../../support/tcp-wire';
import { RawPeer, authProof } from './raw-socket';

jest.setTimeout(60_000);

const SECRET = 'a secret shared by the cluster, 40 bytes';
const tracker = trackEndpoints();

describe.each(PROGRESS_MODES)('tcp authentication on the wire (%s progress)', (progress) => {
  async function receiver(): Promise<{ endpoint: Endpoint; failures: AuthFailedInfo[] }> {
    const endpoint = await tracker.create({
      nodeId: uniqueNodeId('guarded'),
      progress,
      provider: 'tcp',
      listen: 'tcp://127.0.0.1:0',
      auth: { secret: SECRET },
      tcp: { connectTimeoutMs: 2000 },
    });
    const failures: AuthFailedInfo[] = [];
    endpoint.on('authFailed', (info: AuthFailedInfo) => failures.push(info));
    return { endpoint, failures };
  }

  const incarnationOf = (e: Endpoint): bigint => e.nativeIncarnation;

  /** Our hello as a dialer claiming nodeId, and the proof we owe the endpoint behind `theirs`. */
  function handshake(theirs: { nonce: Buffer; nodeId: string; incarnation: bigint }, nodeId: string, nonce = randomBytes(32)) {
    const hello = encodeHello({ nodeId, flags: HELLO_AUTH, nonce, incarnation: 5n });
    const proof = authProof(SECRET, { role: 'dialer', nonce, nodeId, incarnation: 5n }, { role: 'acceptor', ...theirs });
    return { hello, proof, nonce };
  }

  const put = (id: bigint, bytes: Buffer): Buffer =>
    Buffer.concat([encodeHeader({ type: FrameType.Put, id, vaddr: VADDR, len: BigInt(bytes.length) }), bytes]);

  async function failsWith(failures: AuthFailedInfo[], text: RegExp): Promise<void> {
    for (let i = 0; i < 3000 && failures.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(failures).toHaveLength(1);
    expect(failures[0].message).toMatch(text);
  }

  test('a peer that proves the secret by the documented bytes is served; the endpoint proves itself too', async () => {
    const { endpoint, failures } = await receiver();
    const mailbox = endpoint.openMailbox(VADDR);
    mailbox.post(8);
    const { peer, hello: theirs } = await RawPeer.connect(endpoint.address);
    expect(theirs.flags).toBe(HELLO_AUTH);
    const ours = handshake({ nonce: theirs.nonce, nodeId: theirs.nodeId, incarnation: theirs.incarnation }, 'raw-friend');
    await peer.write(Buffer.concat([ours.hello, ours.proof, put(1n, Buffer.from('by hand!'))]));

    const proofAt = theirs.size;
    const answered = await peer.until((all) => {
      const frames = all.length >= proofAt + PROOF_BYTES ? parseFrames(all, proofAt + PROOF_BYTES).frames : [];
      return frames.some((f) => f.type === FrameType.Ack) ? all : undefined;
    });
    expect(answered).toBeDefined();
    // The endpoint's proof, as the acceptor, over both nonces: what our own code computes.
    const expected = authProof(
      SECRET,
      { role: 'acceptor', nonce: theirs.nonce, nodeId: theirs.nodeId, incarnation: theirs.incarnation },
      { role: 'dialer', nonce: ours.nonce, nodeId: 'raw-friend', incarnation: 5n },
    );
    expect(answered!.subarray(proofAt, proofAt + PROOF_BYTES).equals(expected)).toBe(true);
    const done = await mailbox.next({ timeout: 10_000 });
    expect(Buffer.from(done.buffer).toString()).toBe('by hand!');
    expect(theirs.incarnation).toBe(incarnationOf(endpoint));
    expect(failures).toEqual([]);
    peer.destroy();
  });

  test('a recorded handshake replayed on a new connection is refused: the endpoint chose a new nonce', async () => {
    const { endpoint, failures } = await receiver();
    const mailbox = endpoint.openMailbox(VADDR);
    mailbox.post(8);
    mailbox.post(8);
    const first = await RawPeer.connect(endpoint.address);
    const ours = handshake({ nonce: first.hello.nonce, nodeId: first.hello.nodeId, incarnation: first.hello.incarnation }, 'raw-recorded');
    const recorded = Buffer.concat([ours.hello, ours.proof, put(1n, Buffer.from('original'))]);
    await first.peer.write(recorded);
    expect(Buffer.from((await mailbox.next({ timeout: 10_000 })).buffer).toString()).toBe('original');
    first.peer.destroy();

    const replay = await RawPeer.connect(endpoint.address);
    expect(replay.hello.nonce.equals(first.hello.nonce)).toBe(false);
    await replay.peer.write(recorded);
    expect(await replay.peer.end()).not.toBe('timeout');
    await failsWith(failures, /proof does not match/);
    expect(failures[0].message).toContain('raw-recorded');

    // Had the replayed put been placed, it would have ended the next epoch.
    const friend = await tracker.create({ progress, provider: 'tcp', auth: { secret: SECRET } });
    await friend.put(endpoint.address, VADDR, Buffer.from('friend!!'), { timeout: 10_000 });
    const next = await mailbox.next({ timeout: 10_000 });
    expect({ epoch: next.epoch, data: Buffer.from(next.buffer).toString() }).toEqual({ epoch: 2, data: 'friend!!' });
  });

  test("the endpoint's own proof reflected back at it is refused: proofs name the prover's role", async () => {
    const { endpoint, failures } = await receiver();
    const mailbox = endpoint.openMailbox(VADDR);
    mailbox.post(8);
    const victim = { nodeId: endpoint.nodeId, incarnation: incarnationOf(endpoint) };
    // Connection 1 gets nonce A1; connection 2 gets A2 and is told our nonce is A1, so the
    // endpoint proves itself over (A2, A1) claiming its own identity on both sides...
    const one = await RawPeer.connect(endpoint.address);
    const two = await RawPeer.connect(endpoint.address);
    await two.peer.write(encodeHello({ nodeId: victim.nodeId, incarnation: victim.incarnation, flags: HELLO_AUTH, nonce: one.hello.nonce }));
    const reflected = await two.peer.until((all) => (all.length >= two.hello.size + PROOF_BYTES ? all.subarray(two.hello.size, two.hello.size + PROOF_BYTES) : undefined));
    expect(reflected).toBeDefined();
    // ...which is, byte for byte, what connection 1 would need were roles not in the MAC.
    const asAcceptor = authProof(SECRET, { role: 'acceptor', nonce: two.hello.nonce, ...victim }, { role: 'dialer', nonce: one.hello.nonce, ...victim });
    expect(reflected!.equals(asAcceptor)).toBe(true);
    await one.peer.write(Buffer.concat([encodeHello({ nodeId: victim.nodeId, incarnation: victim.incarnation, flags: HELLO_AUTH, nonce: two.hello.nonce }), reflected!, put(1n, Buffer.from('reflect!'))]));
    expect(await one.peer.end()).not.toBe('timeout');
    await failsWith(failures, /proof does not match/);
    two.peer.destroy();
    await expectNothingPlaced(mailbox, 'reflect!', endpoint.address);
  });

  test("a peer claiming an allowed node's id without the secret places nothing; the node itself is served", async () => {
    const { endpoint, failures } = await receiver();
    const friend = await tracker.create({ nodeId: uniqueNodeId('friend'), progress, provider: 'tcp', auth: { secret: SECRET } });
    const mailbox = endpoint.openMailbox(VADDR, { allow: [friend.nodeId] });
    mailbox.post(8);
    const { peer, hello } = await RawPeer.connect(endpoint.address);
    const forged = handshake({ nonce: hello.nonce, nodeId: hello.nodeId, incarnation: hello.incarnation }, friend.nodeId);
    await peer.write(Buffer.concat([forged.hello, randomBytes(PROOF_BYTES), put(1n, Buffer.from('imposter'))]));
    expect(await peer.end()).not.toBe('timeout');
    await failsWith(failures, /proof does not match.*claimed node/);
    await expectNothingPlaced(mailbox, 'imposter', endpoint.address, friend);
  });

  test('frames sent where the proof belongs are read as a (wrong) proof, never as frames', async () => {
    const { endpoint, failures } = await receiver();
    const mailbox = endpoint.openMailbox(VADDR);
    mailbox.post(8);
    const { peer, hello } = await RawPeer.connect(endpoint.address);
    const ours = handshake({ nonce: hello.nonce, nodeId: hello.nodeId, incarnation: hello.incarnation }, 'raw-hasty');
    await peer.write(Buffer.concat([ours.hello, put(1n, Buffer.from('too soon')), put(2n, Buffer.from('too soon'))]));
    expect(await peer.end()).not.toBe('timeout');
    await failsWith(failures, /proof does not match/);
    await expectNothingPlaced(mailbox, 'too soon', endpoint.address);
  });

  test('a hello without the auth flag is refused with a message that says so, on the wire too', async () => {
    const { endpoint, failures } = await receiver();
    const { peer, hello } = await RawPeer.connect(endpoint.address);
    await peer.write(encodeHello({ nodeId: 'raw-plain' }));
    expect(await peer.end()).not.toBe('timeout');
    await failsWith(failures, /the peer does not authenticate/);
    const errors = parseFrames(peer.all(), hello.size).frames.filter((f) => f.type === FrameType.Error);
    expect(errors).toHaveLength(1);
    expect(parseHello(peer.all())!.flags).toBe(HELLO_AUTH);
  });

  test('a peer that never sends its proof is dropped at connectTimeoutMs', async () => {
    const { endpoint } = await receiver();
    const { peer, hello } = await RawPeer.connect(endpoint.address);
    const ours = handshake({ nonce: hello.nonce, nodeId: hello.nodeId, incarnation: hello.incarnation }, 'raw-silent');
    await peer.write(ours.hello);
    expect(await peer.end(15_000)).not.toBe('timeout');
  });

  /** Nothing of `forbidden` landed: a legitimate put ends epoch 1 with its own bytes. */
  async function expectNothingPlaced(
    mailbox: ReturnType<Endpoint['openMailbox']>,
    forbidden: string,
    address: string,
    sender?: Endpoint,
  ): Promise<void> {
    const friend = sender ?? (await tracker.create({ progress, provider: 'tcp', auth: { secret: SECRET } }));
    await friend.put(address, VADDR, Buffer.from('genuine!'), { timeout: 10_000 });
    const done = await mailbox.next({ timeout: 10_000 });
    expect({ epoch: done.epoch, data: Buffer.from(done.buffer).toString() }).toEqual({ epoch: 1, data: 'genuine!' });
    expect(Buffer.from(done.buffer).toString()).not.toBe(forbidden);
  }
});
