// Linux perf around one measurement (profile.ts --perf): `perf record -g` of a child (its JIT
// frames named through --perf-basic-prof) and `perf stat` of its faults, switches and CPU time.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';

export interface PerfRun {
  /** Stops perf (SIGINT) and resolves with what it printed on stderr (perf stat's counts). */
  stop(): Promise<string>;
}

function attach(args: string[]): PerfRun {
  const proc: ChildProcess = spawn('perf', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    async stop() {
      proc.kill('SIGINT');
      await exited;
      return err;
    },
  };
}

export function perfUsable(): boolean {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function perfRecord(pid: number, file: string): PerfRun {
  return attach(['record', '-g', '-F', '4999', '-o', file, '-p', String(pid)]);
}

export function perfStat(pid: number): PerfRun {
  return attach(['stat', '-x', ',', '-e', 'task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations', '-p', String(pid)]);
}

/** perf stat -x output as { event: count }. */
export function parseStat(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const [value, , event] = line.split(',');
    if (event && value && !Number.isNaN(Number(value))) out[event] = Number(value);
  }
  return out;
}

/** The top of `perf report` for a recording: self time by shared object and by symbol. */
export function perfReport(file: string, sort: string, limit: number): string {
  const text = execFileSync('perf', ['report', '-i', file, '--stdio', '--no-children', '-g', 'none', '--sort', sort, '--percent-limit', '0.5'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 64 << 20,
  }).toString();
  return text
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .slice(0, limit)
    .join('\n');
}
