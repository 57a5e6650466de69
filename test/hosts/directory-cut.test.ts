// The Redis directory on a host of its own, cut off from the others (its cable pulled) and
// plugged back in. Shorter than a lease: puts by cached routes go on, a resolve fails typed
// after commandTimeoutMs (it does not wait for TCP to give up), and afterwards every node is
// registered, none reported lost. Longer than a lease: every node is told it lost its
// registration ('lost', expired).
import { randomBytes } from 'node:crypto';
import { type Agent, trackChildren } from '../helpers/children';
import { type BedRedis, agentOn, describeHosts, redisOn } from './hosts';

jest.setTimeout(120_000);
const VADDR = '73728';
const TTL_MS = 6000; // a heartbeat every 2 s
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeHosts('the directory host cut off', 3, (bed) => {
  const children = trackChildren('each');
  let redis: BedRedis | undefined;
  afterEach(async () => {
    bed().restore(bed().hosts[2]);
    await redis?.stop();
    redis = undefined;
  });

  async function pair(): Promise<[Agent, Agent]> {
    const [h0, h1, h2] = bed().hosts;
    redis = await redisOn(bed(), h2);
    const namespace = `cut-${randomBytes(3).toString('hex')}`;
    const options = (host: typeof h0) => ({ provider: 'tcp' as const, listen: `tcp://${host.address}:0`, redis: { url: redis!.url, cluster: namespace, ttlMs: TTL_MS } });
    const [a, b] = await Promise.all([agentOn(children, bed(), h0, 'a', options(h0)), agentOn(children, bed(), h1, 'b', options(h1))]);
    await b.child.request({ cmd: 'open', vaddr: VADDR, options: { epoch: 'ops', threshold: 1, maxBuffers: 64 } });
    for (let i = 0; i < 32; i++) await b.child.request({ cmd: 'post', vaddr: VADDR, size: 8 });
    // By node id: the directory gives the route, which a then keeps.
    await a.child.request({ cmd: 'put', target: b.nodeId, vaddr: VADDR, size: 8, seed: 1 });
    return [a, b];
  }
  const resolve = async (from: Agent, nodeId: string) => (await from.child.request({ cmd: 'resolveNode', nodeId }, 60_000).catch((e: Error & { code?: string }) => ({ error: e.code ?? e.message }))) as unknown as { record?: { nodeId: string } | null; error?: string };

  test('cut for less than a lease: cached routes work, resolves fail typed, and every node is back after', async () => {
    const [a, b] = await pair();
    const h2 = bed().hosts[2];
    bed().cut(h2);
    await sleep(500);
    // Puts by the cached route go on.
    for (let i = 0; i < 5; i++) await a.child.request({ cmd: 'put', target: b.nodeId, vaddr: VADDR, size: 8, seed: 2 });
    // A resolve while Redis cannot be reached fails typed once commandTimeoutMs (5 s by
    // default) has passed without an answer: the cut goes on until it has.
    const during = await resolve(a, `nobody-${randomBytes(2).toString('hex')}`);
    bed().restore(h2);
    expect(during.error).toBe('ERR_RVMA_DIRECTORY_UNAVAILABLE');
    // Within a heartbeat or two of its return, each finds the other.
    for (const [from, to] of [[a, b], [b, a]]) {
      let found: string | undefined;
      for (const end = Date.now() + 3 * (TTL_MS / 3) + 5000; !found && Date.now() < end; await sleep(200)) found = (await resolve(from, to.nodeId)).record?.nodeId;
      expect(found).toBe(to.nodeId);
    }
    for (const x of [a, b]) await expect(x.child.next('directoryLost', 300)).rejects.toThrow(/no matching message/);
  });

  test('cut for longer than a lease: every node is told it lost its registration', async () => {
    const [a, b] = await pair();
    const h2 = bed().hosts[2];
    bed().cut(h2);
    for (const x of [a, b]) expect(await x.child.next('directoryLost', TTL_MS + 10_000)).toMatchObject({ nodeId: x.nodeId, reason: 'expired' });
    bed().restore(h2);
    // Puts by the cached route still go: the directory is not on their path.
    await a.child.request({ cmd: 'put', target: b.nodeId, vaddr: VADDR, size: 8, seed: 3 });
  });
});
