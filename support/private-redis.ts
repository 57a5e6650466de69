// A private redis-server for a launcher whose processes share a RedisDirectory: on a free
// loopback port, no persistence, stopped with the launcher. REDIS_URL, when set, is used instead.
// Also what every private Redis here is started with (tests, soak, benches): finding the
// binary, a free port, and a PING that says the server is up.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

export interface PrivateRedisOptions {
  /** Start a server even when REDIS_URL is set: a benchmark must know what it measures. */
  ignoreRedisUrl?: boolean;
  /** More redis-server arguments, e.g. ['--maxclients', '19968']. */
  args?: string[];
}

/** The redis-server binary (REDIS_SERVER, /usr/bin, /usr/local/bin, then PATH), or undefined. */
export function findRedisServer(): string | undefined {
  const dirs = ['/usr/bin', '/usr/local/bin', ...(process.env.PATH ?? '').split(path.delimiter)].filter(Boolean);
  const candidates = [process.env.REDIS_SERVER, ...dirs.map((d) => path.join(d, 'redis-server'))];
  return candidates.find((c): c is string => {
    if (!c) return false;
    try {
      fs.accessSync(c, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** A port nobody listens on right now (on 127.0.0.1). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** One PING over a raw socket: true on +PONG (or, from a server that wants a password, -NOAUTH) within timeoutMs. */
export function ping(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG') || answer.startsWith('-NOAUTH'));
    });
    socket.on('error', () => done(false));
  });
}

/** REDIS_URL's server, or a new private one; rejects with a message saying what to install. */
export async function privateRedis(options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  if (process.env.REDIS_URL && !options.ignoreRedisUrl) return { url: process.env.REDIS_URL, stop: async () => undefined };
  const binary = findRedisServer();
  if (!binary) throw new Error('redis-server is not installed (apt-get install -y redis-server), and REDIS_URL is not set');
  const port = await freePort();
  const child: ChildProcess = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...(options.args ?? [])], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // However the launcher ends (process.exit on a failure included), the server goes with it.
  const orphan = (): void => void child.kill('SIGKILL');
  process.once('exit', orphan);
  const stop = async (): Promise<void> => {
    process.off('exit', orphan);
    child.kill('SIGTERM');
    await exited;
  };
  for (const started = Date.now(); Date.now() - started < 10_000; ) {
    if (child.exitCode !== null) break;
    if (await ping(port, 300)) return { url: `redis://127.0.0.1:${port}`, stop };
    await new Promise((r) => setTimeout(r, 20));
  }
  await stop();
  throw new Error(`redis-server did not start on port ${port}`);
}
