// Orchestrator side of one variant: a receiver and a sender child process (forked on a
// benchmark's compiled child.js), kept alive across repetitions and driven by requests.
import { ChildProcess, fork } from 'node:child_process';
import { Hello, Measurement, Received, Reply, Request, Scenario, Target, Variant } from './protocol';

const DEFAULT_TIMEOUT_MS = 30_000;

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
type Body = WithoutId<Request>;

class Child {
  readonly pid: number;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(
    private readonly proc: ChildProcess,
    readonly address: string,
    private readonly timeoutMs: number,
  ) {
    this.pid = proc.pid!;
    proc.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (reply.ok) p.resolve(reply.value);
      else p.reject(new Error(reply.error));
    });
    proc.on('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`child exited (${code})`));
      this.pending.clear();
    });
  }

  static start(script: string, args: string[], timeoutMs: number): Promise<Child> {
    const proc = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill();
        reject(new Error(`child ${args[0]} did not start`));
      }, timeoutMs);
      proc.once('message', (hello: Hello) => {
        clearTimeout(timer);
        resolve(new Child(proc, hello.address, timeoutMs));
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`child ${args[0]} exited (${code}) before it was ready`));
      });
    });
  }

  request<T>(body: Body): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${body.cmd} timed out after ${this.timeoutMs} ms`));
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
      this.proc.send({ id, ...body });
    });
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((resolve) => this.proc.once('exit', resolve));
    await Promise.race([this.request({ cmd: 'exit' }).catch(() => undefined), exited]);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

export class Pair {
  private constructor(
    private readonly receiver: Child,
    private readonly sender: Child,
  ) {}

  /**
   * Forks `script receiver VARIANT`, then `script sender VARIANT ADDRESS` with the address the
   * receiver reported. timeoutMs bounds the start of each child and every request.
   */
  static async start(script: string, variant: Variant, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Pair> {
    const spec = JSON.stringify(variant);
    const receiver = await Child.start(script, ['receiver', spec], timeoutMs);
    try {
      const sender = await Child.start(script, ['sender', spec, receiver.address], timeoutMs);
      return new Pair(receiver, sender);
    } catch (error) {
      await receiver.stop();
      throw error;
    }
  }

  get receiverPid(): number {
    return this.receiver.pid;
  }

  get senderPid(): number {
    return this.sender.pid;
  }

  /** One measurement; fails if the receiver did not see every message exactly once. */
  async measure(scenario: Scenario): Promise<Measurement> {
    const target = await this.receiver.request<Target>({ cmd: 'prepare', scenario });
    const m = await this.sender.request<Measurement>({ cmd: 'run', scenario, target });
    const expected = scenario.warmup + scenario.count;
    const got = await this.receiver.request<Received>({ cmd: 'finish', expected });
    if (got.count !== expected || got.bytes !== expected * scenario.size) {
      throw new Error(
        `receiver counted ${got.count} messages / ${got.bytes} bytes, expected ${expected} / ${expected * scenario.size}`,
      );
    }
    return { ...m, receiverCpuNs: got.cpuNs };
  }

  async stop(): Promise<void> {
    await Promise.all([this.sender.stop(), this.receiver.stop()]);
  }
}
