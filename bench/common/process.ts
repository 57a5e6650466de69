// Runs an external program (a C baseline, a perftest tool) for one measurement: its stdout is
// the result, a failure says why with the end of its output, and nothing outlives its timeout.
import { spawn } from 'node:child_process';

export interface Program {
  /** stdout once the program exited 0; rejects on another exit, a signal or the timeout. */
  output: Promise<string>;
  /** Kills it now (e.g. a server whose client failed). */
  kill(): void;
}

export interface ProgramOptions {
  timeoutMs: number;
  /** Sees every complete stdout line as soon as it is printed. */
  onLine?: (line: string) => void;
  /** The program's environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

const TAIL_LINES = 15;

function tail(text: string): string {
  return text.trimEnd().split('\n').slice(-TAIL_LINES).join('\n');
}

export function runProgram(command: string, args: string[], options: ProgramOptions): Program {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env });
  const name = [command, ...args].join(' ');
  let out = '';
  let err = '';
  let seen = 0;
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    out += chunk;
    for (let nl = out.indexOf('\n', seen); nl >= 0; nl = out.indexOf('\n', seen)) {
      options.onLine?.(out.slice(seen, nl));
      seen = nl + 1;
    }
  });
  proc.stderr.on('data', (chunk: string) => (err += chunk));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill('SIGKILL');
  }, options.timeoutMs);
  const output = new Promise<string>((resolve, reject) => {
    proc.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${name}: ${error.message}`));
    });
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(out);
      const why = timedOut ? `timed out after ${options.timeoutMs} ms` : `failed (${signal ?? `exit ${code}`})`;
      const text = [tail(err), tail(out)].filter(Boolean).join('\n');
      reject(new Error(`${name} ${why}${text ? `:\n${text}` : ''}`));
    });
  });
  output.catch(() => undefined); // callers await it; this only keeps an early failure from going unhandled
  return { output, kill: () => proc.kill('SIGKILL') };
}
