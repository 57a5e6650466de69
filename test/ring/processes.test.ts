// Rings of real processes (test/fixtures/ring-member.js) over tcp and shm, members found through
// a private Redis: order and exactly-once of many frames in both directions, byte-exact
// gathered frames, and kill -9 of a member: typed errors on every survivor, then reform with a
// newcomer, and traffic again.
import { trackChildren } from '../helpers/children';
import { type RedisServer, describeRedis, startRedis } from '../helpers/redis';
import { type MemberSetup, type RingMember, aroundOnce, reformWithNewcomer, ringOfProcesses, startMember } from '../helpers/ring-processes';
import { SANITIZED, TRANSPORTS, type Transport } from '../helpers/transports';

const FRAMES = SANITIZED ? 5_000 : 50_000; // per direction: 100,000 in all
const FRAME_BYTES = 64;
// A member's directory lease. Under the sanitizers four members joining at once on two CPUs
// stalled one long enough for a 1 s lease to lapse before it joined; the dead member's lease
// must still lapse well within the re-form's 20 s.
const LEASE_MS = SANITIZED ? 3000 : 1000;

describeRedis('rings of processes', () => {
  const children = trackChildren('each');
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedis();
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });

  const setup = (transport: Transport, progress: 'loop' | 'thread'): MemberSetup => ({ children, redisUrl: server.url, transport, progress, leaseMs: LEASE_MS });
  const start = (transport: Transport, cluster: string, label: string, progress: 'loop' | 'thread'): Promise<RingMember> =>
    startMember(setup(transport, progress), cluster, label);
  const ringOf = (transport: Transport, size: number, progress: 'loop' | 'thread') => ringOfProcesses(setup(transport, progress), size);

  // tcp with loop progress, shm with thread progress: both transports, both progress modes.
  const cases: [string, Transport, 'loop' | 'thread'][] = [
    ['tcp', TRANSPORTS[0], 'loop'],
    ['shm', TRANSPORTS[1], 'thread'],
  ];

  describe.each(cases)('over %s', (_name, transport, progress) => {
    test(`${2 * FRAMES} frames around a 4-rank ring, both directions at once, each once and in order`, async () => {
      const { byRank } = await ringOf(transport, 4, progress);
      const timeout = 60_000;
      const work: Promise<unknown>[] = [];
      for (const dir of ['next', 'prev'] as const) {
        work.push(byRank[0].child.request({ cmd: 'source', dir, count: FRAMES, size: FRAME_BYTES, timeout }, 120_000));
        for (const m of byRank.slice(1)) work.push(m.child.request({ cmd: 'forward', dir, count: FRAMES, timeout }, 120_000));
      }
      const sinks = (['next', 'prev'] as const).map((dir) =>
        byRank[0].child.request({ cmd: 'sink', dir, count: FRAMES, size: FRAME_BYTES, timeout }, 120_000),
      );
      await Promise.all(work);
      for (const sink of await Promise.all(sinks)) expect(sink).toMatchObject({ received: FRAMES, bad: 0 });
    }, 150_000);

    test('kill -9 of a rank mid-stream: every survivor fails typed, then re-forms with a newcomer and streams again', async () => {
      const { byRank, group } = await ringOf(transport, 4, progress);
      const victim = byRank[2];
      const streams = byRank.map((m) => m.child.request({ cmd: 'stream', size: 1024 }, 60_000));
      streams[2].catch(() => undefined); // the victim never answers
      await Promise.all(byRank.map((m) => m.child.next('streaming', 30_000)));
      await victim.child.kill();
      const survivors = byRank.filter((m) => m !== victim);
      const outcomes = await Promise.all(streams.filter((_, rank) => rank !== 2));
      for (const o of outcomes) expect(o).toMatchObject({ code: 'ERR_RVMA_PEER_LOST' });
      expect(outcomes.some((o) => String(o.message).includes(victim.nodeId))).toBe(true);

      // The survivors re-form with room for one more; a newcomer takes the free rank.
      const newcomer = await start(transport, group, `${group}-new`, progress);
      const reformed = await reformWithNewcomer(survivors, newcomer, group, 4);
      for (const r of reformed) expect(r).toMatchObject({ generation: 1, size: 4 });
      expect(reformed.slice(0, 3).map((r) => r.rank)).toEqual([0, 1, 2]); // survivors keep their order
      expect(reformed[3].rank).toBe(3);
      expect(reformed[0].members).not.toContain(victim.nodeId);

      expect(await aroundOnce([...survivors, newcomer], 2000, FRAME_BYTES)).toMatchObject({ received: 2000, bad: 0 });
    }, 120_000);
  });
});
