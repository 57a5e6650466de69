// bench:directory's child processes as run.ts sees them: forked on child.js, asked one request
// at a time with a bound each, and the watchers' Seen messages gathered per event.
import { type ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { type Reply, type Request, type Seen } from './protocol';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

const SCRIPT = path.join(__dirname, 'child.js');
const START_MS = 20_000;

export class DirectoryChild {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();

  private constructor(
    private readonly proc: ChildProcess,
    readonly label: string,
    onSeen: (seen: Seen['seen']) => void,
  ) {
    proc.on('message', (message: Reply | Seen) => {
      if ('seen' in message) return onSeen(message.seen);
      const p = this.pending.get(message.id);
      if (!p) return;
      this.pending.delete(message.id);
      clearTimeout(p.timer);
      if (message.ok) p.resolve(message.value);
      else p.reject(new Error(`${label}: ${message.error}`));
    });
    proc.on('exit', (code, signal) => {
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error(`${label} exited (${signal ?? code})`));
      }
      this.pending.clear();
    });
  }

  static start(label: string, onSeen: (seen: Seen['seen']) => void = () => undefined): Promise<DirectoryChild> {
    const proc = fork(SCRIPT, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`${label} did not start within ${START_MS} ms`));
      }, START_MS);
      proc.once('message', () => {
        clearTimeout(timer);
        resolve(new DirectoryChild(proc, label, onSeen));
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${label} exited (${signal ?? code}) before it was ready`));
      });
    });
  }

  request<T>(body: WithoutId<Request>, timeoutMs: number): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.label}: ${body.cmd} did not finish within ${(timeoutMs / 1000).toFixed(0)} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve: (v) => resolve(v as T), reject, timer });
      this.proc.send({ id, ...body } as Request);
    });
  }

  /** Asks the child to exit; kills it if it has not within 5 s. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((resolve) => this.proc.once('exit', resolve));
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    this.request({ cmd: 'exit' }, 5000).catch(() => undefined);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * The watching children's Seen messages by event ("join x3"): resolves once every one of
 * `children` processes reported the event, with the latest time any watcher saw it.
 */
export class SeenLog {
  private readonly reports = new Map<string, { count: number; lastNs: bigint }>();
  private readonly waiting = new Map<string, () => void>();

  constructor(private readonly children: number) {}

  readonly add = (seen: Seen['seen']): void => {
    const key = `${seen.type} ${seen.nodeId}`;
    const r = this.reports.get(key) ?? { count: 0, lastNs: 0n };
    r.count++;
    const at = BigInt(seen.lastNs);
    if (at > r.lastNs) r.lastNs = at;
    this.reports.set(key, r);
    if (r.count === this.children) this.waiting.get(key)?.();
  };

  /** Whether every watcher saw the event already. */
  heardByAll(key: string): boolean {
    return (this.reports.get(key)?.count ?? 0) >= this.children;
  }

  /** The latest time (process.hrtime.bigint()) a watcher saw the event, or undefined if not all did within timeoutMs. */
  async seenByAll(key: string, timeoutMs: number): Promise<bigint | undefined> {
    const done = (): boolean => this.heardByAll(key);
    if (!done() && timeoutMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, timeoutMs);
        function finish(): void {
          clearTimeout(timer);
          resolve();
        }
        this.waiting.set(key, finish);
      });
      this.waiting.delete(key);
    }
    return done() ? this.reports.get(key)!.lastNs : undefined;
  }
}
