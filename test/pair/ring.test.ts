// A ring across the two guests of scripts/rdma-vm/pair.sh: four ranks over verbs, two in each
// guest, found through a Redis in the first; frames go around whole and in order, over a clean
// wire and over one that drops 1% of the frames each way. Elsewhere this file reports a skip.
import { randomBytes } from 'node:crypto';
import { type Child, trackChildren } from '../helpers/children';
import { PEER_ADDR, IN_PEER, describePair, setWire } from '../helpers/pair';
import { type RedisServer, startRedis } from '../helpers/redis';
import { aroundOnce } from '../helpers/ring-processes';
import { RDMA_ADDR } from '../helpers/verbs';

describePair('a ring across two guests', () => {
  jest.setTimeout(300_000);
  const children = trackChildren('each');
  let redis: RedisServer;
  beforeAll(async () => {
    // Reachable from the second guest too.
    redis = await startRedis(['--bind', '127.0.0.1', RDMA_ADDR, '--protected-mode', 'no']);
  });
  afterAll(() => redis?.stop());
  afterEach(() => setWire({ loss: 0 }));

  test.each([0, 1])('4 ranks, 2 per guest, %i%% of frames lost: 500 frames around, every one checked', async (loss) => {
    const group = `pair-ring-${randomBytes(3).toString('hex')}`;
    const url = `redis://${RDMA_ADDR}:${redis.port}`;
    const start = async (label: string, far: boolean): Promise<{ child: Child; nodeId: string }> => {
      const endpoint = { listen: `rdma://${far ? PEER_ADDR : RDMA_ADDR}:0`, provider: 'verbs', progress: 'loop' };
      const child = children.spawn(label, 'ring-member.js', [JSON.stringify({ endpoint, redis: { url, cluster: group } })], undefined, far ? IN_PEER : []);
      const ready = await child.next('ready', 60_000);
      return { child, nodeId: ready.nodeId as string };
    };
    const members = await Promise.all([start('near0', false), start('far0', true), start('near1', false), start('far1', true)]);
    const joined = await Promise.all(members.map((m) => m.child.request({ cmd: 'join', options: { group, size: 4, timeout: 60_000 } }, 90_000)));
    const byRank = joined.map((_, i) => members[joined.findIndex((j) => j.rank === i)]);
    await setWire({ loss });
    expect(await aroundOnce(byRank, 500, 4096)).toMatchObject({ received: 500, bad: 0 });
  });
});
