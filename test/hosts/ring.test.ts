// A ring of 4 ranks on 4 hosts (test/fixtures/ring-member.js, over tcp, found through a Redis on
// a fifth), streaming frames, when one host goes down as a machine does: its cable pulled and
// every process on it killed, so no reset reaches anyone. Every survivor fails typed
// (ERR_RVMA_PEER_LOST) once the silence outlasts tcp.peerTimeoutMs and tcp.reconnectMs; the
// survivors re-form with a newcomer on another host and stream again, every frame checked.
import { randomBytes } from 'node:crypto';
import { type Child, trackChildren } from '../helpers/children';
import { aroundOnce, reformWithNewcomer } from '../helpers/ring-processes';
import { type BedRedis, describeHosts, redisOn } from './hosts';
import { type Host } from './bed';

jest.setTimeout(180_000);
const FRAME_BYTES = 4096;
const TCP = { keepaliveMs: 200, peerTimeoutMs: 1000, reconnectMs: 1000, connectTimeoutMs: 1000 };

describeHosts('a ring across hosts', 5, (bed) => {
  const children = trackChildren('each');
  let redis: BedRedis | undefined;
  afterEach(async () => {
    for (const h of bed().hosts) bed().restore(h);
    await redis?.stop();
    redis = undefined;
  });

  test.each(['loop', 'thread'] as const)('a host down mid-stream: survivors fail typed, re-form with a newcomer and stream again (%s progress)', async (progress) => {
    const hosts = bed().hosts;
    redis = await redisOn(bed(), hosts[4]);
    const group = `ring-${randomBytes(3).toString('hex')}`;
    const start = async (host: Host, label: string): Promise<{ child: Child; nodeId: string }> => {
      const endpoint = { listen: `tcp://${host.address}:0`, provider: 'tcp', progress, tcp: TCP };
      const child = children.spawn(`${label}@h${host.index}`, 'ring-member.js', [JSON.stringify({ endpoint, redis: { url: redis!.url, cluster: group } })], undefined, bed().prefix(host));
      const ready = await child.next('ready', 30_000);
      return { child, nodeId: ready.nodeId as string };
    };
    const members = await Promise.all(hosts.slice(0, 4).map((h) => start(h, `m${h.index}`)));
    const joined = await Promise.all(members.map((m) => m.child.request({ cmd: 'join', options: { group, size: 4, timeout: 20_000 } }, 30_000)));
    const byRank = joined.map((_, i) => members[joined.findIndex((j) => j.rank === i)]);
    const hostOfRank = (rank: number) => hosts[members.indexOf(byRank[rank])];

    const streams = byRank.map((m) => m.child.request({ cmd: 'stream', size: 1024 }, 60_000));
    await Promise.all(byRank.map((m) => m.child.next('streaming', 30_000)));
    const victim = byRank[2];
    streams[2].catch(() => undefined); // it never answers
    const down = hostOfRank(2);
    bed().cut(down);
    await victim.child.kill();
    const outcomes = await Promise.all(streams.filter((_, rank) => rank !== 2));
    for (const o of outcomes) expect(o).toMatchObject({ code: 'ERR_RVMA_PEER_LOST' });
    expect(outcomes.some((o) => String(o.message).includes(victim.nodeId))).toBe(true);

    const survivors = byRank.filter((m) => m !== victim);
    const newcomer = await start(hosts[4], 'newcomer');
    const reformed = await reformWithNewcomer(survivors, newcomer, group, 4);
    for (const r of reformed) expect(r).toMatchObject({ generation: 1, size: 4 });
    expect(reformed.map((r) => r.rank)).toEqual([0, 1, 2, 3]);
    expect(reformed[0].members).not.toContain(victim.nodeId);

    expect(await aroundOnce([...survivors, newcomer], 1000, FRAME_BYTES)).toMatchObject({ received: 1000, bad: 0 });
  });
});
