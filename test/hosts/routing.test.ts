// Routing across hosts: two processes on each of two hosts (and Redis on a third), every one
// registered in the directory with provider 'auto'. Puts by node id go over shm to a process of
// the same host and over tcp to one of another host; peers() says which, and the directory
// records carry one host identity per host.
import { randomBytes } from 'node:crypto';
import { type Agent, trackChildren } from '../helpers/children';
import { type BedRedis, agentOn, describeHosts, redisOn } from './hosts';

jest.setTimeout(120_000);
const VADDR = '73728'; // 0x12000

describeHosts('routing between hosts', 3, (bed) => {
  const children = trackChildren('each');
  let redis: BedRedis | undefined;
  afterEach(async () => {
    await redis?.stop();
    redis = undefined;
  });

  test.each(['loop', 'thread'] as const)('same host: shm; another host: tcp; records name their host (%s progress)', async (progress) => {
    const [h0, h1, h2] = bed().hosts;
    redis = await redisOn(bed(), h2);
    const namespace = `routing-${randomBytes(3).toString('hex')}`;
    const start = (host: typeof h0, label: string): Promise<Agent> =>
      agentOn(children, bed(), host, label, { progress, provider: 'auto', listen: `tcp://${host.address}:0`, redis: { url: redis!.url, cluster: namespace } });
    const [a, b, c, d] = await Promise.all([start(h0, 'a'), start(h0, 'b'), start(h1, 'c'), start(h1, 'd')]);
    for (const x of [a, b, c, d]) expect(x.addresses).toMatchObject({ tcp: expect.stringContaining(`tcp://10.99.0.`), shm: expect.any(String) });

    // Every agent puts 8 bytes to every other, by node id alone: the directory gives the route.
    const agents = [a, b, c, d];
    for (const to of agents) {
      await to.child.request({ cmd: 'open', vaddr: VADDR, options: { epoch: 'ops', threshold: 1 } });
      for (let i = 0; i < agents.length - 1; i++) await to.child.request({ cmd: 'post', vaddr: VADDR, size: 8 });
    }
    for (const from of agents) {
      for (const to of agents) if (to !== from) await from.child.request({ cmd: 'put', target: to.nodeId, vaddr: VADDR, size: 8, seed: 1 });
    }
    for (const to of agents) {
      for (let i = 0; i < agents.length - 1; i++) expect(await to.child.request({ cmd: 'next', vaddr: VADDR })).toMatchObject({ bytes: 8, ops: 1 });
    }

    const hostOf = new Map([a, b, c, d].map((x, i) => [x.nodeId, i < 2 ? 0 : 1]));
    for (const from of agents) {
      const { peers } = (await from.child.request({ cmd: 'peers' })) as unknown as { peers: { nodeId: string; provider: string }[] };
      const byNode = new Map(peers.map((p) => [p.nodeId, p.provider]));
      for (const to of agents) {
        if (to === from) continue;
        expect([to.nodeId, byNode.get(to.nodeId)]).toEqual([to.nodeId, hostOf.get(to.nodeId) === hostOf.get(from.nodeId) ? 'shm' : 'tcp']);
      }
    }
    // The records: one host identity per host, different across hosts.
    const records = await Promise.all(agents.map(async (x) => ((await a.child.request({ cmd: 'resolveNode', nodeId: x.nodeId })) as unknown as { record: { hostId: string } }).record));
    expect(records.map((r) => typeof r.hostId)).toEqual(['string', 'string', 'string', 'string']);
    expect(records[0].hostId).toBe(records[1].hostId);
    expect(records[2].hostId).toBe(records[3].hostId);
    expect(records[0].hostId).not.toBe(records[2].hostId);
  });
});
