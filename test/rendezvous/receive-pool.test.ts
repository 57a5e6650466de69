// Remote recvs land in pooled buffers: a tensor the application released lends its buffer to
// the next recv of that size (warm memory instead of fresh pages), within receivePoolBytes.
import { bytesOf, floats, trackRendezvous } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };

const bufferOf = (t: { data: unknown }): ArrayBufferLike => (t.data as Float32Array).buffer;

describe.each(['auto', 'tcp'] as const)('the receive pool (provider %s)', (provider) => {
  test('a released tensor lends its buffer to the next recv of that size; bytes are those sent', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider);
    const k = key('pooled');
    sender.mgr.find(1).send(k, floats([1024], 1));
    const first = await receiver.mgr.find(1).recv(k, WAIT);
    const firstBuffer = bufferOf(first.tensor);
    first.release!();
    first.release!(); // idempotent
    expect(receiver.mgr.receivePoolBytes).toBe(4096);
    const t = floats([1024], 2);
    sender.mgr.find(2).send(k, t);
    const second = await receiver.mgr.find(2).recv(k, WAIT);
    expect(bufferOf(second.tensor)).toBe(firstBuffer);
    expect(bytesOf(second.tensor).equals(bytesOf(t))).toBe(true);
    expect(receiver.mgr.receivePoolBytes).toBe(0);
    // Not released: the next recv gets a buffer of its own.
    sender.mgr.find(3).send(k, floats([1024], 3));
    const third = await receiver.mgr.find(3).recv(k, WAIT);
    expect(bufferOf(third.tensor)).not.toBe(firstBuffer);
  });

  test('buffers beyond receivePoolBytes are not kept; a local recv has no release', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider, { receiver: { receivePoolBytes: 4096 } });
    const k = key('small-pool');
    for (let step = 0; step < 3; step++) sender.mgr.find(step).send(k, floats([1024], step));
    const got = [];
    for (let step = 0; step < 3; step++) got.push(await receiver.mgr.find(step).recv(k, WAIT));
    for (const g of got) g.release!();
    expect(receiver.mgr.receivePoolBytes).toBe(4096);
    const local = sender.mgr.find(9);
    const selfKey = k.replace(/task:1\/device/, 'task:0/device'); // the sender's own task at both ends
    local.send(selfKey, floats([4], 9));
    expect((await local.recv(selfKey, WAIT)).release).toBeUndefined();
  });
});
