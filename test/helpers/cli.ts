// Runs the built `rvma` command (dist/src/cli/main.js; `npm test` builds dist first) as a
// child process, bounded, and hands back what it printed and how it exited.
import { ChildProcess, spawn } from 'node:child_process';
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

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
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

  /** Sends the signal and waits (bounded) for the exit status. */
  stop(signal: NodeJS.Signals = 'SIGINT', timeoutMs = 10_000): Promise<number | null> {
    if (this.child.exitCode !== null) return Promise.resolve(this.child.exitCode);
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    return exited.finally(() => clearTimeout(timer));
  }
}
