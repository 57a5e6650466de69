// One child process of the soak, seen from the harness: forked under prlimit (a fixed open-files
// limit, as a production box has), its IPC messages handed to the harness, its stderr tail kept
// to explain a crash, and every wait on it bounded. Every process ever started is remembered, so
// that the harness can SIGCONT + SIGKILL whatever is left however it ends.
import { type ChildProcess, fork } from 'node:child_process';

const live = new Set<ChildProcess>();

/** Kills every child still running (synchronous: usable from an 'exit' handler). */
export function killAllNow(): void {
  for (const child of live) {
    try {
      child.kill('SIGCONT'); // a stopped process must not linger half-dead
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class ChildHandle<In = unknown> {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<ExitInfo>;
  exitInfo: ExitInfo | undefined;
  private stderrTail = '';

  constructor(
    readonly label: string,
    script: string,
    args: string[],
    onMessage: (m: In) => void,
    nofile?: number,
  ) {
    const prefix = nofile ? ['prlimit', `--nofile=${nofile}:${nofile}`, '--'] : [];
    // --expose-gc: the harness may ask for a collection to tell retained memory from garbage.
    this.proc = fork(script, args, {
      ...(prefix.length ? { execPath: prefix[0], execArgv: [...prefix.slice(1), process.execPath, '--expose-gc'] } : { execArgv: ['--expose-gc'] }),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.pid = this.proc.pid ?? -1;
    live.add(this.proc);
    const keep = (chunk: Buffer): void => void (this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000));
    this.proc.stdout!.on('data', keep);
    this.proc.stderr!.on('data', keep);
    this.proc.on('error', () => undefined);
    this.proc.on('message', (m: In) => onMessage(m));
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        live.delete(this.proc);
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  get stderr(): string {
    return this.stderrTail.trim();
  }

  send(message: unknown): void {
    if (this.proc.connected) this.proc.send(message as object, () => undefined);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) {
      try {
        this.proc.kill(signal);
      } catch {
        // gone meanwhile
      }
    }
  }

  /** SIGKILL (after SIGCONT) and wait, bounded, for the exit. */
  async kill(): Promise<void> {
    this.signal('SIGCONT');
    this.signal('SIGKILL');
    await this.waitExit(10_000);
  }

  async waitExit(ms: number): Promise<boolean> {
    if (!this.running) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const done = await Promise.race([this.exited.then(() => true), late]);
    clearTimeout(timer);
    return done;
  }
}
