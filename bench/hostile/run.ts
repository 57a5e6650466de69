// What a peer without the secret can still make a listening endpoint spend, measured from
// outside as an attacker would: a flood it never reads the answers to, connections that never
// say hello, and a process out of descriptors. Prints a table; the victim's memory and CPU are
// read from /proc. Run with: npm run bench:hostile (RVMA_ADDON picks another build of the addon).
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Endpoint } from '../../src';
import { FrameType, encodeHeader, freshHello, parseHello, splitAddress } from '../../support/tcp-wire';

interface Victim {
  proc: ChildProcess;
  address: string;
  protocolErrors: string[];
}

async function startVictim(options: object, nofile?: number): Promise<Victim> {
  const script = path.join(__dirname, 'victim.js');
  const argv = [script, JSON.stringify(options)];
  const proc = nofile
    ? spawn('prlimit', [`--nofile=${nofile}:${nofile}`, '--', process.execPath, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  const victim: Victim = { proc, address: '', protocolErrors: [] };
  let rest = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the victim did not start within 20 s')), 20_000);
    proc.stdout!.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        const m = JSON.parse(line) as { address?: string; protocolError?: string };
        if (m.protocolError) victim.protocolErrors.push(m.protocolError);
        if (m.address) {
          victim.address = m.address;
          clearTimeout(timer);
          resolve();
        }
      }
    });
  });
  return victim;
}

interface Usage {
  rssMiB: number;
  cpuMs: number;
  fds: number;
}

function usage(pid: number): Usage {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime: 100 per second
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return { rssMiB: rssKb / 1024, cpuMs: ticks * 10, fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw connection that completed the hello; `closed` once the victim closed it. */
async function rawPeer(address: string, hello: boolean): Promise<{ socket: net.Socket; closed: () => boolean; closedAt: () => number }> {
  const { host, port } = splitAddress(address);
  const socket = net.connect({ host, port });
  let closedAt = 0;
  socket.on('error', () => {});
  socket.on('close', () => (closedAt = Date.now()));
  let got = Buffer.alloc(0);
  await new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    if (!hello) socket.once('connect', () => resolve());
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (hello && parseHello(got) !== undefined) resolve();
    });
  });
  if (hello) socket.write(freshHello(`attacker-${process.pid}-${port}`));
  return { socket, closed: () => closedAt !== 0, closedAt: () => closedAt };
}

/** Pings written without ever reading the Pongs, until `mib` MiB went or the victim closed. */
async function neverReading(mib: number): Promise<string[]> {
  const victim = await startVictim({});
  const pid = victim.proc.pid!;
  const before = usage(pid);
  const peer = await rawPeer(victim.address, true);
  peer.socket.pause();
  const chunk = Buffer.concat(Array.from({ length: 1024 }, () => encodeHeader({ type: FrameType.Ping })));
  let flushed = 0;
  let peak = before.rssMiB;
  const sampler = setInterval(() => (peak = Math.max(peak, usage(pid).rssMiB)), 50);
  const started = Date.now();
  for (let written = 0; written < mib << 20 && !peer.closed(); written += chunk.length) {
    if (!peer.socket.write(chunk, (e) => !e && (flushed += chunk.length))) {
      await Promise.race([new Promise((r) => peer.socket.once('drain', r)), new Promise((r) => peer.socket.once('close', r))]);
    }
  }
  for (let i = 0; i < 200 && !peer.closed(); i++) await sleep(50); // up to 10 s for the victim's verdict
  clearInterval(sampler);
  const after = usage(pid);
  peer.socket.destroy();
  victim.proc.kill('SIGKILL');
  const closed = peer.closed() ? `closed after ${((peer.closedAt() - started) / 1000).toFixed(1)} s` : 'still open';
  return [`never-reading peer, ${mib} MiB of Pings`, `${(flushed / 2 ** 20).toFixed(1)} MiB taken`, `+${(peak - before.rssMiB).toFixed(1)} MiB peak RSS`, `${(after.cpuMs - before.cpuMs) / 1000} s CPU`, closed];
}

/** Connections that never say hello. */
async function idle(count: number, options: object, label: string): Promise<string[]> {
  const victim = await startVictim(options);
  const pid = victim.proc.pid!;
  const before = usage(pid);
  const peers = [];
  for (let i = 0; i < count; i++) peers.push(await rawPeer(victim.address, false));
  await sleep(1000);
  const after = usage(pid);
  const open = peers.filter((p) => !p.closed()).length;
  for (const p of peers) p.socket.destroy();
  victim.proc.kill('SIGKILL');
  // Per connection only when none was closed: evicted ones' memory is reused, not returned.
  const per = open === count ? `${(((after.rssMiB - before.rssMiB) * 1024) / open).toFixed(1)} KiB RSS each` : '';
  return [`${count} idle connections, ${label}`, `${open} kept open`, `+${(after.rssMiB - before.rssMiB).toFixed(1)} MiB RSS`, per, ''];
}

/** The victim may hold 128 descriptors; 228 connections that never say hello use them up. */
async function outOfDescriptors(): Promise<string[]> {
  const victim = await startVictim({ tcp: { maxHandshakes: 1000, connectTimeoutMs: 60_000 } }, 128);
  const pid = victim.proc.pid!;
  const peers = [];
  for (let i = 0; i < 228; i++) peers.push(await rawPeer(victim.address, false));
  await sleep(500);
  const start = usage(pid);
  await sleep(3000);
  const end = usage(pid);
  const client = await Endpoint.create({ provider: 'tcp', tcp: { connectTimeoutMs: 3000 } });
  const during = await client.connect(victim.address, { timeout: 5000 }).then(() => 'connected', (e: { code: string }) => e.code);
  for (const p of peers) p.socket.destroy();
  await sleep(1000);
  const after = await client.connect(victim.address, { timeout: 5000 }).then(() => 'connected', (e: { code: string }) => e.code);
  await client.close();
  victim.proc.kill('SIGKILL');
  const cpu = (((end.cpuMs - start.cpuMs) / 3000) * 100).toFixed(0);
  return ['out of descriptors (nofile 128, 228 idle connections)', `${start.fds} fds`, `${cpu}% CPU while idle`, `a peer: ${during}`, `once they close: ${after}`];
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  rows.push(await neverReading(40));
  rows.push(await neverReading(80));
  rows.push(await idle(1000, {}, 'defaults'));
  rows.push(await idle(1000, { tcp: { maxHandshakes: 2000, connectTimeoutMs: 60_000 } }, 'maxHandshakes 2000'));
  rows.push(await outOfDescriptors());
  console.log(`addon: ${process.env.RVMA_ADDON ?? 'build/Release'}`);
  console.log('| attack | | | | |\n|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

void main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
