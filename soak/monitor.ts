// What the harness watches from outside each process: resident memory (VmRSS), open descriptors
// (/proc/PID/fd) and CPU time, sampled every couple of seconds per role; and each role's
// heartbeat, to tell a hang (no progress for too long while not stopped on purpose).
import * as fs from 'node:fs';

export interface ProcSample {
  /** Seconds since the workload started. */
  t: number;
  rssKiB: number;
  fds: number;
}

export interface ProcReading {
  rssKiB: number;
  fds: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
}

export const CLOCK_TICKS = 100;

/** One reading of /proc for pid, or undefined when it is gone. */
export function readProc(pid: number): ProcReading | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: state is [0], utime [11], stime [12].
    const cpuTicks = Number(fields[11]) + Number(fields[12]);
    return { rssKiB: rss ? Number(rss[1]) : 0, fds, cpuTicks };
  } catch {
    return undefined;
  }
}

/** The "Max open files" soft limit of pid. */
export function fdLimit(pid: number): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export class Samples {
  readonly byRole = new Map<string, ProcSample[]>();

  add(role: string, sample: ProcSample): void {
    let list = this.byRole.get(role);
    if (!list) this.byRole.set(role, (list = []));
    list.push(sample);
  }

  /** min/max of a field over a role's samples, optionally within [from, to] seconds. */
  range(role: string, field: 'rssKiB' | 'fds', from = -Infinity, to = Infinity): { min: number; max: number; n: number } {
    let min = Infinity;
    let max = -Infinity;
    let n = 0;
    for (const s of this.byRole.get(role) ?? []) {
      if (s.t < from || s.t > to) continue;
      min = Math.min(min, s[field]);
      max = Math.max(max, s[field]);
      n++;
    }
    return { min, max, n };
  }
}

interface Beat {
  progress: number;
  /** When progress last moved, or the role was last (re)started or resumed. */
  movedAt: number;
  heardAt: number;
  paused: boolean;
  flagged: boolean;
}

/** Tells a role that stopped making progress (or stopped beating) for hangMs while it should run. */
export class HangWatch {
  private readonly beats = new Map<string, Beat>();

  constructor(private readonly hangMs: number) {}

  started(role: string, now: number): void {
    this.beats.set(role, { progress: -1, movedAt: now, heardAt: now, paused: false, flagged: false });
  }

  beat(role: string, progress: number, now: number): void {
    const b = this.beats.get(role);
    if (!b) return;
    b.heardAt = now;
    if (progress !== b.progress) {
      b.progress = progress;
      b.movedAt = now;
      b.flagged = false;
    }
  }

  /** Stopped on purpose (SIGSTOP, being restarted): not a hang. */
  pause(role: string): void {
    const b = this.beats.get(role);
    if (b) b.paused = true;
  }

  resume(role: string, now: number): void {
    const b = this.beats.get(role);
    if (!b) return;
    b.paused = false;
    b.movedAt = Math.max(b.movedAt, now);
    b.heardAt = Math.max(b.heardAt, now);
  }

  forget(role: string): void {
    this.beats.delete(role);
  }

  /** Roles hung now (each reported once per hang), with how long. */
  check(now: number): { role: string; ms: number; silent: boolean }[] {
    const out: { role: string; ms: number; silent: boolean }[] = [];
    for (const [role, b] of this.beats) {
      if (b.paused || b.flagged) continue;
      const silent = now - b.heardAt > this.hangMs;
      if (silent || now - b.movedAt > this.hangMs) {
        b.flagged = true;
        out.push({ role, ms: now - (silent ? b.heardAt : b.movedAt), silent });
      }
    }
    return out;
  }
}
