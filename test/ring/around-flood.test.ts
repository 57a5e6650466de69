// around() records are counted puts that nothing retries by itself: a neighbour whose control
// mailbox has no free buffer refuses the ones beyond, and the sender sends each refused record
// again. Over tcp and shm endpoints in one process (loopback places every record at once).
import { Endpoint, type Ring } from '../../src';
import { WAIT, trackRings } from '../helpers/ring';
import { transportCases } from '../helpers/transports';

describe.each(transportCases())('around() flood over %s (%s progress)', (_name, progress, transport) => {
  const { ringOf } = trackRings((p, nodeId) => Endpoint.create({ nodeId, progress: p, listen: transport.listen(), ...transport.options }));

  test('300 around() at once, far more than a control mailbox has buffers: each record arrives once at every rank, each around() resolves', async () => {
    const ring: Ring[] = await ringOf(3, progress);
    const N = 300;
    const seen = ring.slice(1).map(async (r) => {
      const bodies: number[] = [];
      while (bodies.length < N) {
        const m = await r.control({ timeout: WAIT });
        bodies.push((m.record as { body: number }).body);
        await m.pass();
      }
      return bodies.sort((a, b) => a - b);
    }).map((p) => p.catch((e: Error) => e)); // handled now: a failed around() below must not leave these unhandled
    await Promise.all(Array.from({ length: N }, (_, i) => ring[0].around({ type: 'CONTROL', body: i }, { timeout: WAIT })));
    const all = Array.from({ length: N }, (_, i) => i);
    for (const bodies of await Promise.all(seen)) expect(bodies).toEqual(all);
    for (const r of ring) {
      expect(r.pollControl()).toBeUndefined();
      expect([r.failure, r.droppedControl]).toEqual([undefined, 0]);
    }
  });
});
