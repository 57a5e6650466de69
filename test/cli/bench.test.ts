// `rvma bench`: a small tcp run as a user would start it, its results file and plots, the
// progress messages the suite sends, and the bar on a terminal (a pty made by script(1)).
import { execFileSync, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Progress, isProgressMessage } from '../../src/cli/progress';
import { SUITES, suiteArguments } from '../../src/cli/bench-suites';
import { CLI, rvma } from '../helpers/cli';

jest.setTimeout(180_000);

// Two rows, two scenarios, one repetition: seconds, not minutes.
const SMALL = ['--reps', '1', '--scenarios', 'rtt8,bw64k', '--variants', 'mailbox,net', '--no-rate'];
const TCP_RUN = path.join(__dirname, '..', '..', 'dist', 'bench', 'tcp', 'run.js');

let work: string;
beforeEach(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-cli-bench-'));
});
afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

describe('rvma bench', () => {
  test('tcp: the table, one results file in --out with both rows measured, and its plots', async () => {
    const result = await rvma(['bench', 'tcp', ...SMALL, '--out', work], { timeoutMs: 150_000 });
    // Its output says why it failed (a measurement that timed out, a child that died).
    if (result.status !== 0) throw new Error(`rvma bench tcp exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
    expect(result.stdout).toMatch(/^mailbox put \(loop\) /m);
    expect(result.stdout).toMatch(/^node net\.Socket /m);
    // No terminal here: no bar, only the suite's lines.
    expect(result.stdout).not.toMatch(/repetition 1\/1 \|/);
    const files = fs.readdirSync(work);
    const json = files.filter((f) => f.endsWith('.json'));
    expect(json).toEqual([expect.stringMatching(/^tcp-\d{4}-\d\d-\d\dT[\d-]+Z\.json$/)]);
    const record = JSON.parse(fs.readFileSync(path.join(work, json[0]), 'utf8'));
    for (const variant of ['mailbox', 'net']) {
      expect(Object.keys(record.medians[variant]).sort()).toEqual(['bw64k', 'rtt8']);
      for (const value of Object.values(record.medians[variant])) expect(value).toBeGreaterThan(0);
    }
    expect(record.config.subject).toBe('mailbox');
    expect(result.stdout).toContain(`results: ${path.join(work, json[0])}`);
    const plots = files.filter((f) => /\.(svg|png)$/.test(f)).sort();
    const base = json[0].replace(/\.json$/, '');
    expect(plots).toEqual([`${base}-bandwidth.png`, `${base}-bandwidth.svg`, `${base}-round-trips.png`, `${base}-round-trips.svg`]);
    for (const plot of plots) expect(result.stdout).toContain(`plot: ${path.join(work, plot)}`);
  });

  test('ucx_perftest-style knobs: --sizes, --iterations, --warmup and --window shape what is measured', async () => {
    const args = ['bench', 'tcp', '--reps', '1', '--scenarios', 'rtt8,bw64k', '--variants', 'mailbox,net', '--no-rate', '--no-plot', '--out', work];
    const result = await rvma([...args, '--sizes', '8,256k', '--iterations', '40', '--warmup', '0', '--window', '2'], { timeoutMs: 150_000 });
    if (result.status !== 0) throw new Error(`rvma bench tcp exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
    const [file] = fs.readdirSync(work);
    const record = JSON.parse(fs.readFileSync(path.join(work, file), 'utf8'));
    const shape = record.config.scenarios.map((s: { id: string; size: number; count: number; warmup: number; window: number }) => [s.id, s.size, s.count, s.warmup, s.window]);
    expect(shape).toEqual([
      ['rtt8', 8, 40, 0, 1],
      ['rtt256k', 262144, 40, 0, 1],
      ['bw8', 8, 40, 0, 2],
      ['bw256k', 262144, 40, 0, 2],
    ]);
    for (const variant of ['mailbox', 'net']) expect(Object.keys(record.medians[variant]).sort()).toEqual(['bw256k', 'bw8', 'rtt256k', 'rtt8']);
    expect(result.stdout).toMatch(/RTT 256 KiB \(µs\)/);
    const bad = await rvma(['bench', 'tcp', '--sizes', '8,2q']);
    expect([bad.status, bad.stderr]).toEqual([2, expect.stringMatching(/^error: option '--sizes <list>' argument '8,2q' is invalid\. size "2q": a number of bytes from 1 to 1g/)]);
  });

  test('--no-plot writes the results only', async () => {
    const result = await rvma(['bench', 'tcp', '--reps', '1', '--scenarios', 'rtt8', '--variants', 'net', '--no-rate', '--no-plot', '--out', work]);
    expect(result.status).toBe(0);
    expect(fs.readdirSync(work).map((f) => path.extname(f))).toEqual(['.json']);
  });

  test('an unknown id or a bad count is a usage error: one line, status 2, nothing run', async () => {
    const result = await rvma(['bench', 'tcp', '--scenarios', 'nope', '--no-rate', '--out', work]);
    expect([result.status, result.stderr]).toEqual([2, "error: option '--scenarios <ids>' argument 'nope' is invalid. unknown nope (known: rtt8, bw64k, bw1m, bw16m)\n"]);
    const reps = await rvma(['bench', 'ring', '--reps', 'abc', '--out', work]);
    expect([reps.status, reps.stderr]).toEqual([2, "error: option '--reps <n>' argument 'abc' is invalid. needs a positive integer\n"]);
    expect(fs.readdirSync(work)).toEqual([]);
  });

  test('the suite reports each measurement over IPC: exact counts, every scenario and row named', async () => {
    const child = fork(TCP_RUN, SMALL, { env: { ...process.env, RVMA_BENCH_PROGRESS: '1', RVMA_BENCH_RESULTS_DIR: work }, stdio: 'ignore' });
    const seen: Progress[] = [];
    child.on('message', (m) => isProgressMessage(m) && seen.push(m.rvmaProgress));
    const status = await new Promise((resolve) => child.on('exit', resolve));
    expect(status).toBe(0);
    expect(seen.map((p) => p.done)).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(seen.map((p) => p.total))).toEqual(new Set([4]));
    const measured = seen.slice(0, 4).map((p) => `${p.scenario}/${p.row}`).sort();
    expect(measured).toEqual(['64 KiB/mailbox put (loop)', '64 KiB/node net.Socket', 'RTT 8 B/mailbox put (loop)', 'RTT 8 B/node net.Socket']);
  });

  const hasScript = (() => {
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  (hasScript ? test : test.skip)('on a terminal a progress bar shows the repetition, scenario and row', () => {
    const command = [process.execPath, CLI, 'bench', 'tcp', ...SMALL, '--no-plot', '--out', work].map((a) => `'${a}'`).join(' ');
    const output = execFileSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', timeout: 150_000 });
    expect(output).toMatch(/\d\/4 \| repetition 1\/1 \| (RTT 8 B|64 KiB) \| (mailbox put \(loop\)|node net\.Socket)/);
    expect(output).toMatch(/^mailbox put \(loop\) /m);
  });
});

describe('suiteArguments', () => {
  const tcp = SUITES.find((s) => s.name === 'tcp')!;
  test('passes on what was given, in the suite\'s own flags, and nothing else', () => {
    expect(suiteArguments(tcp, { reps: '3', quick: true, rate: false, plot: false, out: '/x' })).toEqual(['--reps', '3', '--quick', '--no-rate']);
    expect(suiteArguments(tcp, { rate: true, rateOnly: true })).toEqual(['--rate-only']);
    expect(suiteArguments(tcp, {})).toEqual([]);
  });
  test('the rdma suite passes on its message-rate flags', () => {
    const rdma = SUITES.find((s) => s.name === 'rdma')!;
    expect(suiteArguments(rdma, { reps: '2', quick: true, rate: true, rateOnly: true })).toEqual(['--reps', '2', '--quick', '--rate-only']);
    expect(suiteArguments(rdma, { rate: false })).toEqual(['--no-rate']);
  });
  test('every suite runs a script of its own under dist/bench', () => {
    expect(SUITES.map((s) => s.name)).toEqual(['tcp', 'shm', 'rdma', 'rendezvous', 'ring']);
    for (const suite of SUITES) expect(suite.script()).toMatch(new RegExp(`^bench/${suite.name}/(run|host)\\.js$`));
  });
});
