// A benchmark's child process (forked on its compiled child.js), seen from the orchestrator:
// started once it says hello, then driven by requests with a timeout each.
import { type ChildProcess, fork } from 'node:child_process';
import { type Hello, type Reply, type Request } from './protocol';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
export type Body = WithoutId<Request>;

export class BenchChild {
  readonly pid: number;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(
    private readonly proc: ChildProcess,
    readonly address: string,
    private readonly timeoutMs: number,
    private readonly label: string,
  ) {
    this.pid = proc.pid!;
    proc.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (reply.ok) p.resolve(reply.value);
      else p.reject(new Error(`${label}: ${reply.error}`));
    });
    proc.on('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`${label} exited (${code})`));
      this.pending.clear();
    });
  }

  /** Forks script with args; resolves with its first message (Hello) once it is ready. */
  static start(script: string, args: string[], timeoutMs: number, label = args[0]): Promise<BenchChild> {
    // RVMA_BENCH_CHILD_FLAGS: Node flags for the children only, to profile them
    // (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"; NODE_OPTIONS refuses --cpu-prof).
    const flags = process.env.RVMA_BENCH_CHILD_FLAGS?.split(' ').filter(Boolean) ?? [];
    const proc = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [...process.execArgv, ...flags] });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill();
        reject(new Error(`${label} did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      proc.once('message', (hello: Hello) => {
        clearTimeout(timer);
        resolve(new BenchChild(proc, hello.address, timeoutMs, label));
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${label} exited (${code}) before it was ready`));
      });
    });
  }

  request<T>(body: Body): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.label}: ${body.cmd} timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.proc.send({ id, ...body } as Request);
    });
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((resolve) => this.proc.once('exit', resolve));
    await Promise.race([this.request({ cmd: 'exit' }).catch(() => undefined), exited]);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

