// npm run bench:auth [-- --reps N] [--quick]: what peer authentication costs per connection and per put, tcp and shm.
import * as os from 'node:os';
import * as path from 'node:path';
import { repetitions } from '../common/args';
import { boundedRun } from '../common/bounded-run';
import { BenchChild } from '../common/child-process';
import { rotated } from '../common/repeat';
import { fixed, median, table } from '../common/stats';
import { type Auth, connectMicros, type Provider, putMetric, Receiver, WAIT_MS, WINDOW } from './measure';

const CHILD = path.join(__dirname, 'child.js');
const AUTHS: Auth[] = ['none', 'auth'];
const QUICK = process.argv.includes('--quick');
/** Per repetition and row: connects, 8-byte round trips, 1 MiB puts (each after untimed warm-up). */
const COUNTS: Record<'connect' | 'rtt' | 'bw', [count: number, warmup: number]> = QUICK
  ? { connect: [20, 2], rtt: [300, 30], bw: [32, 4] }
  : { connect: [100, 5], rtt: [2000, 200], bw: [512, 32] };
const RUN_LIMIT_MS = 30 * 60_000;

interface Setup {
  id: string;
  label: string;
  provider: Provider;
  /** The receiver runs in a forked child process. */
  forked?: boolean;
}

const SETUPS: Setup[] = [
  { id: 'tcp', label: 'tcp, 1 process', provider: 'tcp' },
  { id: 'shm', label: 'shm, 1 process', provider: 'shm' },
  { id: 'tcp2', label: 'tcp, 2 processes', provider: 'tcp', forked: true },
];

type Run = (provider: Provider, auth: Auth, address: string) => Promise<number>;
const METRICS: { id: string; label: string; run: Run }[] = [
  { id: 'connect', label: 'connect() µs', run: (p, a, at) => connectMicros(p, a, at, ...COUNTS.connect) },
  { id: 'rtt', label: '8 B put RTT µs', run: (p, a, at) => putMetric(p, a, at, 'rtt', ...COUNTS.rtt) },
  { id: 'bw', label: `1 MiB put MiB/s (${WINDOW} in flight)`, run: (p, a, at) => putMetric(p, a, at, 'bw', ...COUNTS.bw) },
];

interface Listener {
  address: string;
  close(): Promise<void>;
}

async function startReceiver(setup: Setup, auth: Auth): Promise<Listener> {
  if (setup.forked) {
    const variant = { id: auth, label: auth, transport: 'tcp' };
    const child = await BenchChild.start(CHILD, ['receiver', JSON.stringify(variant)], 2 * WAIT_MS, `receiver (${auth})`);
    return { address: child.address, close: () => child.stop() };
  }
  const listen = setup.provider === 'tcp' ? 'tcp://127.0.0.1:0' : `shm://rvma-bench-auth-${process.pid}-${auth}`;
  return Receiver.create(setup.provider, auth, listen);
}

function cell(values: number[] | undefined, digits: number): string {
  if (!values?.length) return '-';
  return `${fixed(median(values), digits)} [${fixed(Math.min(...values), digits)}..${fixed(Math.max(...values), digits)}]`;
}

async function main(): Promise<void> {
  const reps = repetitions(QUICK ? 2 : 5);
  const started = Date.now();
  const loadBefore = os.loadavg();
  const receivers = new Map<string, Listener>();
  const samples = new Map<string, number[]>();
  let failures = 0;
  try {
    for (const setup of SETUPS) for (const auth of AUTHS) receivers.set(`${setup.id}/${auth}`, await startReceiver(setup, auth));
    for (let rep = 0; rep < reps; rep++) {
      const t0 = Date.now();
      for (const setup of SETUPS) {
        for (const metric of METRICS) {
          for (const auth of rotated(AUTHS, rep)) {
            const key = `${setup.id}/${metric.id}/${auth}`;
            try {
              const value = await metric.run(setup.provider, auth, receivers.get(`${setup.id}/${auth}`)!.address);
              samples.set(key, [...(samples.get(key) ?? []), value]);
            } catch (error) {
              failures++;
              console.log(`  ${key} rep ${rep + 1} failed: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`);
            }
          }
        }
      }
      console.log(`repetition ${rep + 1}/${reps} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    await Promise.all([...receivers.values()].map((r) => r.close()));
  }

  const [connects, connectWarmup] = COUNTS.connect;
  const [rtts, rttWarmup] = COUNTS.rtt;
  const [bws, bwWarmup] = COUNTS.bw;
  const rows = SETUPS.flatMap((setup) =>
    METRICS.map((metric) => {
      const digits = metric.id === 'bw' ? 0 : 1;
      const of = (auth: Auth): number[] | undefined => samples.get(`${setup.id}/${metric.id}/${auth}`);
      const ratio = median(of('auth') ?? []) / median(of('none') ?? []);
      return [`${setup.label}: ${metric.label}`, cell(of('none'), digits), cell(of('auth'), digits), fixed(ratio, 2)];
    }),
  );
  console.log('');
  console.log(`Medians of ${reps} repetitions [min..max], without auth (none) and with auth: { secret } on both sides.`);
  console.log(
    `Per repetition and row: ${connects} connect() calls, each from a fresh sender endpoint (median; ${connectWarmup} untimed first); ` +
      `${rtts} 8-byte puts one at a time (median; ${rttWarmup} untimed first); ${bws} 1 MiB puts (${bwWarmup} untimed first).`,
  );
  console.log(
    '"1 process": receiver and sender endpoints in this process (loop progress); ' +
      '"2 processes": the receiver in a forked child. No CPU pinning.',
  );
  console.log(table([['transport: metric', 'none', 'auth', 'auth/none'], ...rows]));
  console.log('auth/none: ratio of medians (time rows: above 1 = auth slower; MiB/s rows: below 1 = auth slower).');
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\n${failures} failed measurements; ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
      `${os.cpus().length} CPUs, load average before ${load(loadBefore)}, after ${load(os.loadavg())}.`,
  );
  if (failures) process.exitCode = 1;
}

boundedRun('bench:auth', main, RUN_LIMIT_MS);
