// npm run bench:instructions [-- --counts 20000,120000]: CPU instructions a sender spends per
// 8-byte counted put over tcp, counted by valgrind's callgrind. Unlike time on a shared
// machine, the count moves by a few percent from run to run, so it shows what a change to the
// put path saves. The sender runs twice under callgrind (the receiver natively) with two put
// counts; the difference of the totals over the difference of the counts is the cost of one
// put, start-up and warm-up cancelled out. The sender's batches are fixed by its window (32
// puts per wake-up); the receiver is not measured this way, as what it spends per put depends
// on how many puts each of its reads happens to carry.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const PEER = path.join(__dirname, 'peer.js');
const RUN_LIMIT_MS = 20 * 60_000;

function counts(): [number, number] {
  const at = process.argv.indexOf('--counts');
  const [a, b] = (at > 0 ? process.argv[at + 1] : '20000,120000').split(',').map(Number);
  if (!(a > 0 && b > a)) throw new Error('--counts takes two ascending positive counts, e.g. 20000,120000');
  return [a, b];
}

function callgrind(out: string): string[] {
  return ['valgrind', '--tool=callgrind', '--quiet', `--callgrind-out-file=${out}`];
}

/** The total instructions in a callgrind output file. */
function totalOf(file: string): number {
  const line = readFileSync(file, 'utf8').split('\n').find((l) => /^(summary|totals):/.test(l));
  if (!line) throw new Error(`no totals in ${file}`);
  return Number(line.split(/\s+/)[1]);
}

function start(command: string[], args: string[]): ChildProcess {
  const [program, ...rest] = [...command, process.execPath, PEER, ...args];
  return spawn(program, rest, { stdio: ['ignore', 'pipe', 'inherit'] });
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(text.split('\n')[0].trim());
    });
    child.once('exit', (code) => reject(new Error(`the receiver exited (${code}) before it listened`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve)));
}

/** Total instructions of the sender's process for one run of `count` puts. */
async function run(count: number): Promise<number> {
  const out = path.join(tmpdir(), `rvma-callgrind-${process.pid}-${count}.out`);
  const receiver = start([], ['receiver']);
  try {
    const address = await firstLine(receiver);
    const sender = start(callgrind(out), ['sender', address, String(count)]);
    const code = await exited(sender);
    if (code !== 0) throw new Error(`the sender exited with ${code}`);
  } finally {
    receiver.kill('SIGINT');
    await exited(receiver);
  }
  const total = totalOf(out);
  rmSync(out, { force: true });
  return total;
}

async function main(): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.log('bench:instructions skipped: valgrind is not installed (Debian package valgrind)');
    return;
  }
  const timer = setTimeout(() => {
    console.error(`bench:instructions: no result within ${RUN_LIMIT_MS / 60_000} minutes`);
    process.exit(1);
  }, RUN_LIMIT_MS);
  const [few, many] = counts();
  console.log(`instructions per 8-byte counted put over tcp (callgrind; ${many} - ${few} puts, 64 in flight, loop progress)`);
  const perPut = ((await run(many)) - (await run(few))) / (many - few);
  console.log(`sender: ${Math.round(perPut)} instructions per put`);
  clearTimeout(timer);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
