// What the Sentinel and Cluster launchers share: their redis-server processes, killed together
// (also when this process exits) with their directory removed, and a short-lived client that
// asks one of them a question.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import Redis from 'ioredis';

export interface ServerAt {
  host: string;
  port: number;
  /** For servers on TLS alone: the CA their certificate is signed by. */
  tls?: { ca: Buffer };
}

/** One short-lived client's answer; undefined when that server cannot be asked. */
export async function askServer<T>(at: ServerAt, question: (c: Redis) => Promise<T>): Promise<T | undefined> {
  const client = new Redis({ ...at, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // A server that is down is an answer here (undefined), not an "Unhandled error event" on stderr.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await question(client);
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/** The processes of one set of servers, by port, in a working directory of their own. */
export class ServerProcesses {
  private readonly procs = new Map<number, ChildProcess>();
  private readonly onExit = (): void => this.procs.forEach((p) => p.kill('SIGKILL'));

  constructor(
    private readonly binary: string,
    readonly dir: string,
  ) {
    process.once('exit', this.onExit);
  }

  start(port: number, args: string[]): ChildProcess {
    const child = spawn(this.binary, args, { cwd: this.dir, stdio: ['ignore', 'ignore', 'ignore'] });
    this.procs.set(port, child);
    return child;
  }

  running(port: number): boolean {
    const p = this.procs.get(port);
    return p !== undefined && p.exitCode === null && p.signalCode === null;
  }

  kill(port: number): void {
    this.procs.get(port)?.kill('SIGKILL');
  }

  /** Kills every process, waits for their ends, and removes the directory. */
  async stop(): Promise<void> {
    process.removeListener('exit', this.onExit);
    await Promise.all(
      [...this.procs.values()].map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
