// A private redis-server for a launcher whose processes share a RedisDirectory: on a free
// loopback port, no persistence, stopped with the launcher. REDIS_URL, when set, is used instead.
// Also what every private Redis here is started with (tests, soak, benches): finding the
// binary, a free port, a PING that says the server is up, and the one launcher (RedisProcess).
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
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
  return RedisProcess.start(options.args);
}

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

/**
 * The one launcher of a lone private redis-server (benches, examples, tests, soak): a free
 * loopback port, no persistence, a temp dir, its output kept for the error that says why it did
 * not start. restart() brings it back on the same port, empty; whatever way this process ends,
 * the server is killed with it.
 */
export class RedisProcess implements PrivateRedis {
  private proc: ChildProcess | undefined;
  private log = '';
  /** Restarts so far. */
  restarts = 0;
  private readonly onExit = (): void => this.killNow();

  private constructor(
    private readonly binary: string,
    private readonly dir: string,
    readonly port: number,
    private readonly args: string[],
  ) {}

  /** args: more redis-server arguments (a password, ACL users, TLS, ['--maxclients', '19968']). */
  static async start(args: string[] = []): Promise<RedisProcess> {
    const binary = findRedisServer();
    if (!binary) throw new Error('redis-server is not installed (apt-get install -y redis-server), and REDIS_URL is not set');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-redis-'));
    let lastError: Error | undefined;
    // A port found free may be taken before redis binds it: try a few.
    for (let attempt = 0; attempt < 3; attempt++) {
      const redis = new RedisProcess(binary, dir, await freePort(), args);
      try {
        await redis.launch();
        return redis;
      } catch (error) {
        lastError = error as Error;
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
    throw lastError!;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The server's pid while it runs. */
  get pid(): number | undefined {
    return this.running ? this.proc!.pid : undefined;
  }

  /** Stops the server (if it runs), waits downMs, and starts it again on the same port, empty. */
  async restart(downMs = 0): Promise<void> {
    await this.stopProcess();
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.launch();
    this.restarts++;
  }

  /** Stops the server and removes its directory; restart() may still start it again. */
  async stop(): Promise<void> {
    await this.stopProcess();
    process.removeListener('exit', this.onExit);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** For exit handlers: synchronous. */
  killNow(): void {
    this.proc?.kill('SIGKILL');
  }

  private get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  private async launch(): Promise<void> {
    this.log = '';
    fs.mkdirSync(this.dir, { recursive: true });
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--daemonize', 'no'];
    const child = spawn(this.binary, [...args, ...this.args], { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = child;
    process.removeListener('exit', this.onExit);
    process.once('exit', this.onExit);
    const keep = (chunk: Buffer): void => void (this.log = (this.log + chunk.toString()).slice(-4000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.on('error', (error) => (this.log += `\nspawn error: ${error.message}`));
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.running) break;
      if (await ping(this.port, 300)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    await this.stopProcess();
    throw new Error(`redis-server on port ${this.port} did not answer PING within ${START_TIMEOUT_MS} ms:\n${this.log}`);
  }

  /** SIGTERM, then SIGKILL if it has not ended within STOP_TIMEOUT_MS. */
  private async stopProcess(): Promise<void> {
    const child = this.proc;
    if (!child || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS)));
    if ((await Promise.race([exited, late])) === 'late') {
      child.kill('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
  }
}
