// Wake-ups per frame, counted rather than timed: a 3-rank ring of processes passes one frame at
// a time, each rank busy for a moment before it passes the frame on (a layer computing), so
// the others sleep meanwhile as in pipelined decoding. Each rank should wake once per frame,
// for the frame: not for acknowledgements nobody waits on, nor for credits, nor (thread
// progress) for the sends of its own JavaScript. Counted by the endpoint (Ring.stats), not timed.
import { trackChildren } from '../helpers/children';
import { type RedisServer, describeRedis, startRedis } from '../helpers/redis';
import { ringOfProcesses } from '../helpers/ring-processes';
import { TRANSPORTS } from '../helpers/transports';

const FRAMES = 1000;
const FRAME_BYTES = 16 << 10;
const COMPUTE_MS = 1;
const SIZE = 3;

interface RankReport {
  bad: number;
  switches: number;
  stats: { framesSent: number; framesReceived: number; creditRecordsSent: number; creditRecordsReceived: number; wakeups: number; progressWakeups: number };
}

describeRedis('wake-ups per frame on a ring of processes', () => {
  const children = trackChildren('each');
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedis();
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  });

  const cases = TRANSPORTS.filter((t) => t.name !== 'shm-copy').flatMap((t) => (['loop', 'thread'] as const).map((p) => [t.name, p, t] as const));

  test.each(cases)('over %s, %s progress: one wake-up per frame on every rank', async (_name, progress, transport) => {
    const setup = { children, redisUrl: server.url, transport, progress };
    const { byRank } = await ringOfProcesses(setup, SIZE, { frameBytes: FRAME_BYTES + 64 });
    // Every rank's counts are taken before the first frame leaves (a forwarder's progress thread
    // may receive it before that rank's own run request is read).
    await Promise.all(byRank.map((m) => m.child.request({ cmd: 'mark' }, 30_000)));
    const run = { cmd: 'stopAndWait', count: FRAMES, size: FRAME_BYTES, computeMs: COMPUTE_MS, timeout: 20_000 };
    const reports = (await Promise.all(byRank.map((m) => m.child.request(run, 120_000)))) as unknown as RankReport[];
    const perFrame = (n: number): string => (n / FRAMES).toFixed(3);
    console.log(
      `${_name}/${progress}: wake-ups per frame by rank ${reports.map((r) => perFrame(r.stats.wakeups)).join(' ')}; progress thread ${reports.map((r) => perFrame(r.stats.progressWakeups)).join(' ')}; main thread voluntary switches ${reports.map((r) => perFrame(r.switches)).join(' ')}`,
    );
    for (const r of reports) {
      expect(r.bad).toBe(0);
      expect(r.stats.framesSent).toBe(FRAMES);
      expect(r.stats.framesReceived).toBe(FRAMES);
      // One record per half window of released frames, not one per frame.
      expect(r.stats.creditRecordsSent).toBeLessThanOrEqual(FRAMES / 16);
      expect(r.stats.wakeups / FRAMES).toBeLessThanOrEqual(1.1);
      // The progress thread too: woken by what arrives, not by the sends JavaScript makes.
      if (progress === 'loop') expect(r.stats.progressWakeups).toBe(0);
      else expect(r.stats.progressWakeups / FRAMES).toBeLessThanOrEqual(1.1);
    }
  }, 180_000);
});
