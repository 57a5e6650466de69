// A private redis-server for a launcher whose processes share a RedisDirectory: on a free
// loopback port, no persistence, stopped with the launcher. REDIS_URL, when set, is used instead.
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

function findServer(): string | undefined {
  const dirs = ['/usr/bin', '/usr/local/bin', ...(process.env.PATH ?? '').split(path.delimiter)];
  return dirs.map((d) => path.join(d, 'redis-server')).find((p) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(300, () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => done(chunk.toString('latin1').startsWith('+PONG')));
    socket.on('error', () => done(false));
  });
}

/** REDIS_URL's server, or a new private one; rejects with a message saying what to install. */
export async function privateRedis(): Promise<PrivateRedis> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => undefined };
  const binary = findServer();
  if (!binary) throw new Error('redis-server is not installed (apt-get install -y redis-server), and REDIS_URL is not set');
  const port = await freePort();
  const child: ChildProcess = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
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
    if (await answersPing(port)) return { url: `redis://127.0.0.1:${port}`, stop };
    await new Promise((r) => setTimeout(r, 20));
  }
  await stop();
  throw new Error(`redis-server did not start on port ${port}`);
}
