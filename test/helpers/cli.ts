// Runs the built `rvma` command (dist/src/cli/main.js; `npm test` builds dist first) as a
// child process, bounded, and hands back what it printed and how it exited.
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';

export const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

export interface CliResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function rvma(args: string[], options: { timeoutMs?: number; env?: NodeJS.ProcessEnv; prefix?: string[] } = {}): Promise<CliResult> {
  const [command, ...rest] = [...(options.prefix ?? []), process.execPath, CLI, ...args];
  const child = spawn(command, rest, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  return new Promise((resolve) =>
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    }),
  );
}

/** A long-running command (directory watch): its stdout read line by line with bounded waits. */
export class CliProcess {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private waiters: (() => void)[] = [];
  stderr = '';

  /** prefix: a command that runs it (e.g. `ip netns exec NAME`). */
  constructor(args: string[], prefix: string[] = []) {
    const [command, ...rest] = [...prefix, process.execPath, CLI, ...args];
    this.child = spawn(command, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }

  /** Waits (bounded) for the process to end by itself: its exit status, or null (a signal). */
  async exited(timeoutMs: number): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.child.once('exit', () => resolve())),
        new Promise<void>((_, reject) => (timer = setTimeout(() => reject(new Error(`the process did not end within ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs))),
      ]).finally(() => clearTimeout(timer));
    }
    return this.child.exitCode;
  }

  /** The first line not yet taken that matches; throws after timeoutMs. */
  async line(what: string, match: (line: string) => boolean, timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.lines.findIndex(match);
      if (index >= 0) return this.lines.splice(index, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms; stdout so far: ${this.lines.join(' | ')}; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Sends the signal and waits (bounded) for the exit status (null when a signal ended it). */
  stop(signal: NodeJS.Signals = 'SIGINT', timeoutMs = 10_000): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve(this.child.exitCode);
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    return exited.finally(() => clearTimeout(timer));
  }
}
