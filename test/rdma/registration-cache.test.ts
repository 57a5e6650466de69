// The verbs registration cache: a buffer used again for large puts, reads into mailbox
// buffers or raw writes is registered once; memory whose lifetime JS cannot vouch for is
// registered per use; unused registrations give way to the budget, to the locked-memory limit
// and to garbage collection. Runs inside the Soft-RoCE guest only (`npm run test:rdma`).
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Endpoint, type EndpointOptions, type ProgressMode, type RegistrationStats } from '../../src';
import { seededBytes, sha256, startAgent, trackChildren } from '../helpers/children';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer } from '../helpers/data';
import { EAGER_MAX, RDMA_ADDR, describeInGuest, underMemlock, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const WAIT = { timeout: 60_000 };
const SIZE = 64 * 1024; // read by the receiver: larger than the eager limit

function stats(endpoint: Endpoint): RegistrationStats {
  const s = endpoint.registrationStats();
  if (!s) throw new Error(`${endpoint.nodeId} runs no verbs`);
  return s;
}

function bytes(len: number, seed: number): Uint8Array {
  // Its own ArrayBuffer (a copy), as a tensor's storage would be.
  return new Uint8Array(seededBytes(len, seed));
}

/** Puts each source in turn into a fresh epoch of a one-buffer mailbox, checking every byte. */
async function putEach(sender: Endpoint, receiver: Endpoint, sources: Uint8Array[], target?: Uint8Array): Promise<void> {
  const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1 });
  for (const source of sources) {
    const posted = mailbox.post(target ?? source.byteLength);
    await sender.put(receiver.address, VADDR, source, WAIT);
    const done = await mailbox.next(WAIT);
    expect(done.buffer).toBe(posted);
    expect(asBuffer(done.buffer).subarray(0, source.byteLength).equals(asBuffer(source))).toBe(true);
  }
  await mailbox.close();
}

async function pair(progress: ProgressMode, verbs: EndpointOptions['verbs'] = {}): Promise<[Endpoint, Endpoint]> {
  const receiver = await verbsEndpoint(endpoints, progress, { verbs });
  const sender = await verbsEndpoint(endpoints, progress, { verbs });
  return [sender, receiver];
}

describeInGuest('verbs registration cache', () => {
  jest.setTimeout(180_000);

  test.each(PROGRESS_MODES)('%s: a source put 8 times and a mailbox buffer read into 8 times are registered once each', async (progress) => {
    const [sender, receiver] = await pair(progress);
    const source = bytes(SIZE, 1);
    const target = new Uint8Array(SIZE);
    await putEach(sender, receiver, Array(8).fill(source), target);
    expect(stats(sender)).toEqual({ registrations: 1, reuses: 7, evictions: 0, registeredBytes: SIZE });
    expect(stats(receiver)).toEqual({ registrations: 1, reuses: 7, evictions: 0, registeredBytes: SIZE });
  });

  test('eager puts register nothing', async () => {
    const [sender, receiver] = await pair('loop');
    await putEach(sender, receiver, [bytes(EAGER_MAX, 2), bytes(100, 3)]);
    expect(stats(sender)).toEqual({ registrations: 0, reuses: 0, evictions: 0, registeredBytes: 0 });
    expect(stats(receiver)).toEqual({ registrations: 0, reuses: 0, evictions: 0, registeredBytes: 0 });
  });

  test('a resizable ArrayBuffer is registered per put and not kept (it may shrink under a registration)', async () => {
    const [sender, receiver] = await pair('loop');
    // (ES2024's constructor form; this project's TypeScript lib predates it)
    const Resizable = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer;
    const resizable = new Resizable(SIZE, { maxByteLength: 2 * SIZE });
    const source = new Uint8Array(resizable);
    source.set(seededBytes(SIZE, 4));
    await putEach(sender, receiver, [source, source, source]);
    expect(stats(sender)).toEqual({ registrations: 3, reuses: 0, evictions: 0, registeredBytes: 0 });
  });

  test('registrationCacheBytes: 0 keeps nothing', async () => {
    const [sender, receiver] = await pair('loop', { registrationCacheBytes: 0 });
    const source = bytes(SIZE, 5);
    await putEach(sender, receiver, [source, source]);
    expect(stats(sender)).toEqual({ registrations: 2, reuses: 0, evictions: 0, registeredBytes: 0 });
  });

  test('beyond registrationCacheBytes the least recently used registration goes first', async () => {
    const [sender, receiver] = await pair('loop', { registrationCacheBytes: 2 * SIZE });
    const [a, b, c] = [bytes(SIZE, 6), bytes(SIZE, 7), bytes(SIZE, 8)];
    await putEach(sender, receiver, [a, b, a, c]); // c pushes out b, used less recently than a
    expect(stats(sender)).toEqual({ registrations: 3, reuses: 1, evictions: 1, registeredBytes: 2 * SIZE });
    await putEach(sender, receiver, [a, b]); // a still kept; b again, pushing out c
    expect(stats(sender)).toEqual({ registrations: 4, reuses: 2, evictions: 2, registeredBytes: 2 * SIZE });
  });

  test('raw writes from one source are registered once', async () => {
    const [sender, receiver] = await pair('loop');
    const region = receiver.registerRegion(SIZE);
    const source = bytes(SIZE, 9);
    for (let i = 0; i < 3; i++) {
      await sender.rawWrite(receiver.address, region.key, 0n, source, WAIT);
      expect(await region.next(WAIT)).toEqual({ offset: 0, bytes: SIZE });
    }
    expect(asBuffer(region.buffer).equals(asBuffer(source))).toBe(true);
    expect(stats(sender)).toMatchObject({ registrations: 1, reuses: 2 });
  });

  test("a collected buffer's registration goes with it", async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const [sender, receiver] = await pair('loop');
    await putEach(sender, receiver, [bytes(SIZE, 10)]); // the source is unreachable after this
    expect(stats(sender).registeredBytes).toBe(SIZE);
    for (let i = 0; i < 100 && stats(sender).registeredBytes > 0; i++) {
      gc();
      await sleep(50);
    }
    expect(stats(sender)).toEqual({ registrations: 1, reuses: 0, evictions: 0, registeredBytes: 0 });
  });

  describe('under a locked-memory limit', () => {
    const children = trackChildren('each');

    test('unused registrations are dropped when a new one would not fit, and the put lands', async () => {
      // Ring, staging and receive buffers (about 84 KiB) plus one 128 KiB buffer fit 256 KiB; two do not.
      const receiver = await startAgent(
        children,
        'receiver',
        { provider: 'verbs', listen: `rdma://${RDMA_ADDR}:0`, verbs: { slots: 4, slotBytes: 4096, receiveDepth: 64 } },
        underMemlock(256 * 1024),
      );
      const sender = await verbsEndpoint(endpoints, 'loop');
      const v = VADDR.toString();
      await receiver.child.request({ cmd: 'open', vaddr: v });
      for (const seed of [11, 12, 13]) {
        await receiver.child.request({ cmd: 'post', vaddr: v, size: 128 * 1024, threshold: SIZE });
        await sender.put(receiver.address, VADDR, bytes(SIZE, seed), WAIT);
        const done = await receiver.child.request({ cmd: 'next', vaddr: v, hashBytes: SIZE, ...WAIT }, 60_000);
        expect(done).toMatchObject({ bytes: SIZE, ops: 1, sha256: sha256(seededBytes(SIZE, seed)) });
      }
      const { stats: s } = await receiver.child.request({ cmd: 'registrations' });
      expect(s).toEqual({ registrations: 3, reuses: 0, evictions: 2, registeredBytes: 128 * 1024 });
    });
  });
});
