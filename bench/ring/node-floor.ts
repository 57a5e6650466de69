// npm run bench:ring:floor [-- --reps N]: the least a Node.js rank spends on a hop. Three Node
// processes pass one byte around a ring of sockets (Unix domain and TCP loopback, TCP_NODELAY),
// stop and wait: each hop is a write, the next process waking in libuv and running one
// callback. No ring of Node processes, rvma's included, has a shorter hop than this; the C TCP
// ring of bench:ring has no event loop to wake, so it can be.
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repetitions } from '../common/args';
import { canPin, placementOf } from '../common/placement';
import { fixed, median, table } from '../common/stats';
import { RANKS } from './config';

const ROUND_TRIPS = 6_000;
type Socket = 'unix' | 'tcp';
type Placement = 'same CPU' | 'spread';

/** Where rank r listens. */
function address(socket: Socket, dir: string, port0: number, rank: number): { path: string } | { port: number; host: string } {
  return socket === 'unix' ? { path: path.join(dir, `${rank}.sock`) } : { port: port0 + rank, host: '127.0.0.1' };
}

/** A rank: forwards each byte to the next; rank 0 times the round trips and reports the median hop. */
function rank(socket: Socket, dir: string, port0: number, r: number): void {
  let out: net.Socket;
  const times: number[] = [];
  let started = 0n;
  const send = (): void => {
    started = process.hrtime.bigint();
    out.write('a');
  };
  const server = net.createServer((s) => {
    s.setNoDelay(true);
    s.on('data', (bytes) => {
      if (r !== 0) return void out.write(bytes);
      times.push(Number(process.hrtime.bigint() - started));
      if (times.length < ROUND_TRIPS) send();
      else process.send!({ hopUs: median(times) / 1000 / RANKS });
    });
  });
  server.listen(address(socket, dir, port0, r), () => process.send!('listening'));
  process.on('message', (m) => {
    if (m === 'connect') {
      out = net.connect(address(socket, dir, port0, (r + 1) % RANKS), () => process.send!('connected'));
      out.setNoDelay(true);
    } else if (m === 'go') send();
    else if (m === 'exit') process.exit(0);
  });
}

function next<T>(child: ChildProcess, accept: (m: unknown) => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: unknown): void => {
      const got = accept(m);
      if (got === undefined) return;
      child.off('message', onMessage);
      resolve(got);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`a rank exited (${code}) before it answered`)));
  });
}

async function measure(socket: Socket, placement: Placement, port0: number): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rvma-floor-'));
  const ranks = Array.from({ length: RANKS }, (_, r) => fork(__filename, ['rank', socket, dir, String(port0), String(r)]));
  try {
    const said = (what: string) => (m: unknown) => (m === what ? true : undefined);
    await Promise.all(ranks.map((c) => next(c, said('listening'))));
    await Promise.all(ranks.map((c) => {
      const connected = next(c, said('connected'));
      c.send('connect');
      return connected;
    }));
    const cpu = placementOf('same')!.receiver;
    if (placement === 'same CPU') for (const c of ranks) execFileSync('taskset', ['-a', '-p', '-c', cpu, String(c.pid)], { stdio: 'ignore' });
    const result = next(ranks[0], (m) => (typeof m === 'object' && m !== null && 'hopUs' in m ? (m as { hopUs: number }).hopUs : undefined));
    ranks[0].send('go');
    return await result;
  } finally {
    for (const c of ranks) c.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const reps = repetitions(3);
  const placements: Placement[] = canPin() ? ['same CPU', 'spread'] : ['spread'];
  const rows = [['ring of 3 Node processes, 1 byte', ...placements.map((p) => `hop µs, ${p}`)]];
  let port0 = 20_000 + (process.pid % 20_000);
  for (const socket of ['unix', 'tcp'] as const) {
    const row = [socket === 'unix' ? 'Unix domain sockets' : 'TCP loopback, TCP_NODELAY'];
    for (const placement of placements) {
      const hops: number[] = [];
      for (let i = 0; i < reps; i++, port0 += RANKS) hops.push(await measure(socket, placement, port0));
      row.push(`${fixed(median(hops), 1)} [${fixed(Math.min(...hops), 1)}..${fixed(Math.max(...hops), 1)}]`);
    }
    rows.push(row);
  }
  console.log(
    `The least a Node.js rank spends on a hop: ${ROUND_TRIPS} round trips of one byte around ${RANKS} processes, stop and wait; ` +
      `median hop (a round trip / ${RANKS}), medians of ${reps} runs [min..max]; same CPU: all ranks on CPU ${placementOf('same')!.receiver} (taskset, all threads)`,
  );
  console.log(table(rows));
}

if (process.argv[2] === 'rank') {
  rank(process.argv[3] as Socket, process.argv[4], Number(process.argv[5]), Number(process.argv[6]));
} else {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
