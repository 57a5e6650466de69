// npm run bench:ring:in-process [-- --reps N]: a 3-rank ring whose ranks are endpoints of one
// process (loopback), 16 KiB frames: the CPU a hop costs in JavaScript, N-API and the native
// data plane alone, with no transport. Stop and wait (one frame around at a time, forwarders
// as in bench/ring) and pipelined (a window of frames in flight).
import { Endpoint, Ring } from '../../src';
import { repetitions } from '../common/args';
import { fixed, median, table } from '../common/stats';
import { DATA_BYTES, HEADER_BYTES, RANKS } from './config';

const FRAMES = 30_000;
const WARMUP = 2_000;

type Mode = 'stop and wait' | 'pipelined';

interface Sample {
  cpuUsPerHop: number;
  wallUsPerHop: number;
}

async function measure(mode: Mode): Promise<Sample> {
  const endpoints = await Promise.all(Array.from({ length: RANKS }, () => Endpoint.create({ progress: 'loop' })));
  try {
    const group = `in-process-${process.pid}-${Date.now()}`;
    const rings = await Promise.all(endpoints.map((e, rank) => Ring.join(e, { group, size: RANKS, rank })));
    for (const r of rings.slice(1)) {
      (async () => {
        for (;;) {
          const f = await r.recvPrev();
          await r.sendNext([f.header, f.data]);
          f.release();
        }
      })().catch(() => undefined); // ends when the ring closes
    }
    const header = new Uint8Array(HEADER_BYTES);
    const data = new Uint8Array(DATA_BYTES);
    const origin = rings[0];
    const run = async (n: number): Promise<void> => {
      if (mode === 'stop and wait') {
        for (let i = 0; i < n; i++) {
          const back = origin.recvPrev();
          await origin.sendNext([header, data]);
          (await back).release();
        }
        return;
      }
      const received = (async () => {
        for (let i = 0; i < n; i++) (await origin.recvPrev()).release();
      })();
      for (let i = 0; i < n; i++) await origin.sendNext([header, data]); // waits for credits beyond the window
      await received;
    };
    await run(WARMUP);
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    await run(FRAMES);
    const wallNs = Number(process.hrtime.bigint() - start);
    const used = process.cpuUsage(cpu);
    const hops = FRAMES * RANKS;
    await Promise.all(rings.map((r) => r.close()));
    return { cpuUsPerHop: (used.user + used.system) / hops, wallUsPerHop: wallNs / 1000 / hops };
  } finally {
    await Promise.all(endpoints.map((e) => e.close()));
  }
}

async function main(): Promise<void> {
  const reps = repetitions(5);
  const modes: Mode[] = ['stop and wait', 'pipelined'];
  const samples = new Map<Mode, Sample[]>(modes.map((m) => [m, []]));
  for (let rep = 0; rep < reps; rep++) for (const mode of modes) samples.get(mode)!.push(await measure(mode));
  const rows = [['mode', 'CPU µs per hop', 'wall µs per hop']];
  for (const mode of modes) {
    const s = samples.get(mode)!;
    rows.push([mode, fixed(median(s.map((x) => x.cpuUsPerHop)), 2), fixed(median(s.map((x) => x.wallUsPerHop)), 2)]);
  }
  console.log(`In-process ring (loopback), ${RANKS} ranks, ${HEADER_BYTES} + ${DATA_BYTES} B frames, ${FRAMES} frames per measurement, medians of ${reps} (pipelined: as many in flight as the credits allow, the ring's default slots)`);
  console.log(table(rows));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
