// Child processes for multi-process tests: forked programs from test/fixtures that report
// JSON lines on stdout and take commands over the IPC channel. Every wait on a child is
// bounded, and every child is SIGKILLed after its test (or file) even when the test failed.
import { type ChildProcess, fork } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ShmOptions } from '../../src';

export const FIXTURES = path.join(__dirname, '..', 'fixtures');

export interface ChildMessage {
  type: string;
  id?: number;
  error?: { code?: string; message: string };
  [key: string]: unknown;
}

/** What a command's reply carried when the child's operation failed. */
export class ChildCommandError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'ChildCommandError';
  }
}

interface Waiter {
  match: (m: ChildMessage) => boolean;
  resolve: (m: ChildMessage) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class Child {
  readonly proc: ChildProcess;
  readonly exited: Promise<ExitInfo>;
  private exitInfo: ExitInfo | undefined;
  private readonly queue: ChildMessage[] = [];
  private readonly waiters: Waiter[] = [];
  private stdoutRest = '';
  private stderrText = '';
  private nextId = 1;

  /** prefix: a command that runs node, e.g. ['prlimit', '--memlock=65536', '--'] (the IPC channel survives its exec). */
  constructor(
    readonly label: string,
    script: string,
    args: string[],
    env?: NodeJS.ProcessEnv,
    prefix: string[] = [],
  ) {
    // execArgv []: no inherited --inspect or ts-jest flags; the child runs plain CommonJS.
    this.proc = fork(path.join(FIXTURES, script), args, {
      ...(prefix.length ? { execPath: prefix[0], execArgv: [...prefix.slice(1), process.execPath] } : { execArgv: [] }),
      stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, ...env },
    });
    this.proc.stdout!.setEncoding('utf8');
    this.proc.stdout!.on('data', (chunk: string) => this.onStdout(chunk));
    this.proc.stderr!.setEncoding('utf8');
    this.proc.stderr!.on('data', (chunk: string) => {
      // Keep the tail only: enough to explain a crash.
      this.stderrText = (this.stderrText + chunk).slice(-8000);
    });
    // A command sent to a child that just died must not crash the test process.
    this.proc.on('error', () => {});
    this.proc.stdin!.on('error', () => {});
    this.exited = new Promise<ExitInfo>((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        const error = new Error(`child ${this.label} exited (code ${code}, signal ${signal})${this.stderrTail()}`);
        for (const w of this.waiters.splice(0)) {
          clearTimeout(w.timer);
          w.reject(error);
        }
        resolve(this.exitInfo);
      });
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  get stderr(): string {
    return this.stderrText;
  }

  /** The next message matching `match` (a type or a predicate); earlier ones stay queued. */
  next(match: string | ((m: ChildMessage) => boolean), timeoutMs = 30_000): Promise<ChildMessage> {
    const test = typeof match === 'string' ? (m: ChildMessage) => m.type === match : match;
    const i = this.queue.findIndex(test);
    if (i >= 0) return Promise.resolve(this.queue.splice(i, 1)[0]);
    if (this.exitInfo) {
      return Promise.reject(new Error(`child ${this.label} already exited${this.stderrTail()}`));
    }
    return new Promise<ChildMessage>((resolve, reject) => {
      const waiter: Waiter = {
        match: test,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          reject(new Error(`child ${this.label}: no matching message within ${timeoutMs} ms${this.stderrTail()}`));
        }, timeoutMs),
      };
      this.waiters.push(waiter);
    });
  }

  /** Sends a command and waits (bounded) for its reply; a failed operation rejects with ChildCommandError. */
  async request(command: Record<string, unknown>, timeoutMs = 30_000): Promise<ChildMessage> {
    const id = this.nextId++;
    const reply = this.next((m) => m.type === 'reply' && m.id === id, timeoutMs);
    this.send({ ...command, id });
    const m = await reply;
    if (m.error) throw new ChildCommandError(m.error.code, `child ${this.label}: ${m.error.message}`);
    return m;
  }

  send(message: Record<string, unknown>): void {
    if (this.proc.connected) this.proc.send(message);
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.exitInfo) this.proc.kill(signal);
  }

  /** SIGKILL and wait (bounded) for the exit. */
  async kill(timeoutMs = 15_000): Promise<ExitInfo> {
    this.signal('SIGKILL');
    return this.waitExit(timeoutMs);
  }

  waitExit(timeoutMs = 15_000): Promise<ExitInfo> {
    if (this.exitInfo) return Promise.resolve(this.exitInfo);
    let timer: NodeJS.Timeout;
    return Promise.race([
      this.exited,
      new Promise<ExitInfo>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`child ${this.label} did not exit within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  private onStdout(chunk: string): void {
    const lines = (this.stdoutRest + chunk).split('\n');
    this.stdoutRest = lines.pop()!;
    for (const line of lines) {
      if (!line.trim()) continue;
      let message: ChildMessage;
      try {
        message = JSON.parse(line) as ChildMessage;
      } catch {
        this.stderrText = (this.stderrText + `[stdout] ${line}\n`).slice(-8000);
        continue;
      }
      if (message.type === 'fatal') this.stderrText = (this.stderrText + `[fatal] ${String(message.message)}\n`).slice(-8000);
      const i = this.waiters.findIndex((w) => w.match(message));
      if (i >= 0) {
        const [w] = this.waiters.splice(i, 1);
        clearTimeout(w.timer);
        w.resolve(message);
      } else {
        this.queue.push(message);
      }
    }
  }

  private stderrTail(): string {
    return this.stderrText ? `\n--- stderr of ${this.label} ---\n${this.stderrText}` : '';
  }
}

export interface ChildTracker {
  /** Forks test/fixtures/<script> with args (under prefix, see Child); killed after the test (or the file, for 'all'). */
  spawn(label: string, script: string, args?: string[], env?: NodeJS.ProcessEnv, prefix?: string[]): Child;
  /** Kills every child spawned so far and waits for their exits. */
  killAll(): Promise<void>;
}

/** Call at the top level of a file or describe; scope 'each' kills in afterEach, 'all' in afterAll. */
export function trackChildren(scope: 'each' | 'all' = 'each'): ChildTracker {
  const live: Child[] = [];
  const killAll = async (): Promise<void> => {
    const all = live.splice(0);
    for (const c of all) {
      c.signal('SIGCONT'); // a stopped child must not linger half-dead
      c.signal('SIGKILL');
    }
    await Promise.all(all.map((c) => c.waitExit(15_000).catch(() => undefined)));
  };
  (scope === 'each' ? afterEach : afterAll)(killAll);
  return {
    spawn(label, script, args = [], env, prefix) {
      const child = new Child(label, script, args, env, prefix);
      live.push(child);
      return child;
    },
    killAll,
  };
}

/** Options for test/fixtures/agent.js (argv[2], JSON). */
export interface AgentOptions {
  nodeId?: string;
  progress?: 'loop' | 'thread';
  listen?: string;
  provider?: 'auto' | 'tcp' | 'shm' | 'verbs';
  tcp?: Record<string, number>;
  verbs?: Record<string, number>;
  shm?: ShmOptions;
  /** Peer authentication (Endpoint.create's auth). */
  auth?: { secret: string };
  /** Register in a RedisDirectory (RedisDirectory.connect's options) instead of a private MemoryDirectory. */
  redis?: { url: string; cluster: string; ttlMs?: number; connectTimeoutMs?: number };
}

export interface Agent {
  child: Child;
  nodeId: string;
  /** Where the agent listens ('' if it does not). */
  address: string;
  /** Every address it accepts peers at (endpoint.addresses). */
  addresses: Record<string, string>;
  incarnation: string;
}

/** Starts an agent child (under prefix, see Child) and waits (bounded) until its endpoint is up. */
export async function startAgent(tracker: ChildTracker, label: string, options: AgentOptions, prefix?: string[]): Promise<Agent> {
  const child = tracker.spawn(label, 'agent.js', [JSON.stringify(options)], undefined, prefix);
  // Generous: a loaded 2-core machine starting many Node processes at once is slow.
  const ready = await child.next('ready', 30_000);
  return {
    child,
    nodeId: ready.nodeId as string,
    address: ready.address as string,
    addresses: ready.addresses as Record<string, string>,
    incarnation: ready.incarnation as string,
  };
}

/**
 * One 8-byte put from sender to receiver, into a mailbox of its own at vaddr: its answer
 * proves both ends of their connection are up, so losing it is reported on either side.
 */
export async function provenConnection(sender: Agent, receiver: Agent, vaddr: bigint): Promise<void> {
  const v = vaddr.toString();
  await receiver.child.request({ cmd: 'open', vaddr: v });
  await receiver.child.request({ cmd: 'post', vaddr: v, size: 8 });
  await sender.child.request({ cmd: 'put', target: receiver.address, vaddr: v, size: 8, seed: 9 });
}

/**
 * Kills `victim` (a 'loop' progress agent) in the middle of a put of `size` seeded bytes (seed 1,
 * offset 0) to `receiver`'s mailbox at vaddr: the receiver is stopped meanwhile, so it has
 * certainly not taken the whole put, and is resumed once the victim is dead.
 */
export async function killSenderMidPut(victim: Agent, receiver: Agent, vaddr: string, size: number): Promise<void> {
  receiver.child.signal('SIGSTOP');
  await waitStopped(receiver.child.pid);
  await victim.child.request({ cmd: 'putAndBlock', target: receiver.address, vaddr, size, seed: 1, offset: 0 });
  await victim.child.kill();
  receiver.child.signal('SIGCONT');
}

/**
 * Waits until every thread of a SIGSTOPped process is stopped (state T in /proc), so the
 * test knows the process reads nothing more. Bounded by timeoutMs.
 */
export async function waitStopped(pid: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let all = true;
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      let stat: string;
      try {
        stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      } catch {
        continue; // the thread ended meanwhile
      }
      // The state follows the parenthesised command name, which may itself contain spaces.
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'T' && state !== 't') all = false;
    }
    if (all) return;
    if (Date.now() > deadline) throw new Error(`process ${pid} did not stop within ${timeoutMs} ms`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Re-checks an async condition (each check is a round trip, not a sleep) until it holds; bounded. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not true within ${timeoutMs} ms`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * len pseudo-random bytes determined by seed (AES-128-CTR keystream): a child and the test
 * can both produce them, so large payloads never cross the IPC channel. Same as the fixture's.
 */
export function seededBytes(len: number, seed: number): Buffer {
  const key = createHash('sha256').update(`rvma-test-${seed}`).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(len)), cipher.final()]);
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
