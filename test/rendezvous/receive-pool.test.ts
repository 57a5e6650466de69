// Remote recvs land in pooled buffers: a tensor the application released, or whose step was
// cleaned up with recycle on, lends its buffer to the next recv of that size (warm memory
// instead of fresh pages), within receivePoolBytes.
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
  test('recycle: a step loop that never calls release() receives into the buffers of the steps it cleaned up', async () => {
    const STEPS = 24;
    /** Buffers new to the recvs of the second half of a step loop (each step's bytes checked). */
    async function newInSecondHalf(recycle: boolean): Promise<number> {
      const { sender, receiver, key } = await rendezvous.pair(provider, { receiver: { recycle } });
      const k = key('recycled');
      const seen = new Set<ArrayBufferLike>();
      let fresh = 0;
      for (let step = 1; step <= STEPS; step++) {
        const t = floats([1024], step);
        sender.mgr.find(step).send(k, t);
        const got = await receiver.mgr.find(step).recv(k, WAIT);
        expect(bytesOf(got.tensor).equals(bytesOf(t))).toBe(true);
        if (!seen.has(bufferOf(got.tensor)) && step > STEPS / 2) fresh++;
        seen.add(bufferOf(got.tensor));
        // Steps end two behind, as a pipelined step loop ends them.
        if (step > 2) receiver.mgr.cleanup(step - 2);
        sender.mgr.cleanup(step);
      }
      return fresh;
    }
    expect(await newInSecondHalf(false)).toBe(STEPS / 2); // a fresh buffer every step
    // Once the steps in flight and the push mailbox (the key repeats) have their buffers, no more.
    expect(await newInSecondHalf(true)).toBe(0);
  });

  test('recycle per recv: true recycles at cleanup, false and the default do not; release() before cleanup counts once', async () => {
    const { sender, receiver, key } = await rendezvous.pair(provider, { receiver: { pushBufferBytes: 0 } });
    const k = key('per-recv');
    for (let step = 1; step <= 4; step++) sender.mgr.find(step).send(k, floats([1024], step));
    const plain = await receiver.mgr.find(1).recv(k, WAIT);
    const declined = await receiver.mgr.find(2).recv(k, { ...WAIT, recycle: false });
    const recycled = await receiver.mgr.find(3).recv(k, { ...WAIT, recycle: true });
    const released = await receiver.mgr.find(4).recv(k, { ...WAIT, recycle: true });
    const size = bufferOf(recycled.tensor).byteLength;
    released.release!();
    expect(receiver.mgr.receivePoolBytes).toBe(size);
    for (let step = 1; step <= 4; step++) receiver.mgr.cleanup(step);
    expect(receiver.mgr.receivePoolBytes).toBe(2 * size); // step 3's at its cleanup, step 4's once
    expect([plain, declined].every((r) => r.release !== undefined)).toBe(true);
    await expect(receiver.mgr.find(5).recv(k, { ...WAIT, recycle: 'yes' as unknown as boolean })).rejects.toMatchObject({
      code: 'ERR_RVMA_INVALID_ARGUMENT',
    });
  });
});
