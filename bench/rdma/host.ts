// npm run bench:rdma [-- --reps N] [--variants a,b] [--scenarios x,y] [--no-rate | --rate-only]
// [--quick]: on the host, after the build. Runs run.js (and its options) inside one boot of the
// Soft-RoCE guest (scripts/rdma-vm/run.sh), passes its output through, then says where the
// guest stage's time went (boot, bench, the rest) and adds that to each results file.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { revision } from '../common/results';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const RUN_SH = path.join(ROOT, 'scripts', 'rdma-vm', 'run.sh');
const BENCH = path.relative(ROOT, path.join(__dirname, 'run.js'));

// run.sh's progress lines (stderr) and the line each part of the bench ends with (stdout).
const READY = /guest ready \(\S+ ACTIVE\) ([\d.]+) s after QEMU start/;
const OFF = /guest off after ([\d.]+) s/;
const RESULTS = /^results: (\S+\.json)$/;

interface Seen {
  bootSeconds?: number;
  qemuSeconds?: number;
  /** The results files, in the order the bench wrote them (the table's, then the rate part's). */
  results: string[];
}

/** Copies a stream line by line to out, showing each line to watch. */
function follow(stream: NodeJS.ReadableStream, out: NodeJS.WritableStream, watch: (line: string) => void): Promise<void> {
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  lines.on('line', (line) => {
    out.write(`${line}\n`);
    watch(line);
  });
  return new Promise((resolve) => lines.once('close', resolve));
}

function seconds(value: number | undefined): string {
  return value === undefined ? '?' : value.toFixed(1);
}

type RunRecord = Record<string, unknown>;

/**
 * The time split, printed and (when the bench wrote results) recorded in each of them, with the
 * host's load: the guest's CPUs are host threads, so other work on the host (another guest, a
 * build) slows every row and stretches round trips most, perftest's busy-polling ones above all.
 */
function account(seen: Seen, totalSeconds: number, hostLoadBefore: number[]): void {
  const files = seen.results.map((f) => path.resolve(ROOT, f)).filter((f) => fs.existsSync(f));
  const records = files.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as RunRecord);
  // The bench process ran until the last record was written; measuring is every part's, summed.
  const guest = records[records.length - 1]?.guest as { processSeconds?: number } | undefined;
  const measuring = records.length ? records.reduce((sum, r) => sum + ((r.seconds as number | undefined) ?? 0), 0) : undefined;
  const bench = guest?.processSeconds;
  const known = (seen.bootSeconds ?? 0) + (bench ?? 0);
  const stage = {
    totalSeconds: Number(totalSeconds.toFixed(1)),
    bootSeconds: seen.bootSeconds,
    benchSeconds: bench,
    measuringSeconds: measuring === undefined ? undefined : Number(measuring.toFixed(1)),
    /** image check, QEMU start, starting the command over 9p, power-off */
    otherSeconds: Number((totalSeconds - known).toFixed(1)),
    hostLoadavgBefore: hostLoadBefore,
    hostLoadavgAfter: os.loadavg(),
  };
  console.log(
    `\nguest stage ${seconds(totalSeconds)} s: boot to an ACTIVE rxe0 ${seconds(seen.bootSeconds)} s, ` +
      `bench ${seconds(bench)} s (measuring ${seconds(measuring)} s, the rest starting node and the child processes), ` +
      `other ${seconds(stage.otherSeconds)} s (image check, QEMU start, power-off; QEMU ran ${seconds(seen.qemuSeconds)} s).` +
      `\nhost load average (1 min) ${hostLoadBefore[0].toFixed(2)} before, ${stage.hostLoadavgAfter[0].toFixed(2)} after ` +
      `(${os.cpus().length} CPUs; the guest's two run on them).`,
  );
  // The guest has no git (and no view of a worktree's git folder): the host names the commit.
  records.forEach((record, i) => {
    const rev = record.revision ?? revision(ROOT);
    fs.writeFileSync(files[i], `${JSON.stringify({ ...record, revision: rev, guestStage: stage }, null, 2)}\n`);
  });
}

async function main(): Promise<number> {
  const seen: Seen = { results: [] };
  const started = Date.now();
  const hostLoadBefore = os.loadavg();
  const vm = spawn('bash', [RUN_SH, '--', 'node', BENCH, ...process.argv.slice(2)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number>((resolve) => vm.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  await Promise.all([
    follow(vm.stdout, process.stdout, (line) => {
      const results = RESULTS.exec(line)?.[1];
      if (results) seen.results.push(results);
    }),
    follow(vm.stderr, process.stderr, (line) => {
      const ready = READY.exec(line);
      if (ready) seen.bootSeconds = Number(ready[1]);
      const off = OFF.exec(line);
      if (off) seen.qemuSeconds = Number(off[1]);
    }),
  ]);
  const code = await exited;
  account(seen, (Date.now() - started) / 1000, hostLoadBefore);
  return code;
}

main().then(
  (code) => (process.exitCode = code),
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
