// Busy polling over shm (shm.busyPollUs), in both progress modes: the rings are polled instead
// of waiting for a wake-up, then the endpoint goes back to sleep. Nothing may be lost across
// that switch: round trips spaced so that each side has gone back to sleep (the wake-up path)
// and back to back (the spinning path) all complete, with exact counts.
import { type Endpoint, type ProgressMode } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';

const endpoints = trackEndpoints();

async function pingPong(a: Endpoint, b: Endpoint, rounds: number, pauseEveryMs: number): Promise<number> {
  const inA = a.openMailbox(VADDR, { epoch: 'ops' });
  const inB = b.openMailbox(VADDR, { epoch: 'ops' });
  for (let i = 0; i < 4; i++) {
    inA.post(8);
    inB.post(8);
  }
  let seen = 0;
  for (let i = 0; i < rounds; i++) {
    const data = Buffer.alloc(8);
    data.writeUInt32LE(i, 0);
    const atB = inB.next({ timeout: 10_000 });
    await a.put(b.address, VADDR, data, { timeout: 10_000 });
    const got = await atB;
    inB.post(got.buffer);
    const atA = inA.next({ timeout: 10_000 });
    await b.put(a.address, VADDR, got.buffer, { timeout: 10_000 });
    const back = await atA;
    inA.post(back.buffer);
    if (Buffer.from(back.buffer.buffer, back.buffer.byteOffset, 8).readUInt32LE(0) === i) seen++;
    // Longer than the polling window: both sides are asleep again when the next put comes.
    if (pauseEveryMs && i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, pauseEveryMs));
  }
  return seen;
}

describe.each(PROGRESS_MODES)('shm busy polling (%s progress)', (progress: ProgressMode) => {
  jest.setTimeout(60_000);
  const create = (): Promise<Endpoint> =>
    endpoints.create({ provider: 'shm', listen: `shm://${uniqueNodeId('busy')}`, progress, shm: { busyPollUs: 200 } });

  test('2,000 round trips back to back, and 400 with pauses past the window: every one arrives', async () => {
    const a = await create();
    const b = await create();
    expect(await pingPong(a, b, 2000, 0)).toBe(2000);
    const c = await create();
    const d = await create();
    expect(await pingPong(c, d, 400, 2)).toBe(400);
  });
});
