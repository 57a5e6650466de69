// The soak's private redis-server: a free loopback port, no persistence, a temp dir; restart()
// (the redis-restart fault) stops it and starts it again on the same port, empty. Killed with
// the harness whatever way it ends (see run.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findRedisServer, freePort, ping } from '../support/private-redis';

export { freePort };

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

export class PrivateRedis {
  private proc: ChildProcess | undefined;
  private log = '';
  restarts = 0;

  private constructor(
    private readonly binary: string,
    private readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.proc?.exitCode === null && this.proc.signalCode === null ? this.proc.pid : undefined;
  }

  static async start(): Promise<PrivateRedis> {
    const binary = findRedisServer();
    if (!binary) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-soak-redis-'));
    let lastError: Error | undefined;
    // A port found free may be taken before redis binds it: try a few.
    for (let attempt = 0; attempt < 3; attempt++) {
      const redis = new PrivateRedis(binary, dir, await freePort());
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

  /** Stops the server, waits downMs, and starts it again on the same port (empty). */
  async restart(downMs: number): Promise<void> {
    await this.stopProcess();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.launch();
    this.restarts++;
  }

  async stop(): Promise<void> {
    await this.stopProcess();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** For exit handlers: synchronous. */
  killNow(): void {
    this.proc?.kill('SIGKILL');
  }

  private async launch(): Promise<void> {
    this.log = '';
    fs.mkdirSync(this.dir, { recursive: true });
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--daemonize', 'no'];
    const child = spawn(this.binary, args, { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = child;
    const keep = (chunk: Buffer): void => void (this.log = (this.log + chunk.toString()).slice(-4000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.on('error', (error) => (this.log += `\nspawn error: ${error.message}`));
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) break;
      if (await ping(this.port, 300)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    await this.stopProcess();
    throw new Error(`redis-server on port ${this.port} did not answer PING within ${START_TIMEOUT_MS} ms:\n${this.log}`);
  }

  private async stopProcess(): Promise<void> {
    const child = this.proc;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
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
