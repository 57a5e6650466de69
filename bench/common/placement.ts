// CPU placement (--placement same|split|none), the same for every variant of a run. On these
// VMs a wake-up across vCPUs costs tens of µs with millisecond tails, so unpinned runs are
// bimodal (the scheduler sometimes keeps the pair on one CPU, sometimes not) and a split pair
// is slower still. Default 'same': receiver and sender (all their threads) on one CPU, which
// measures the software path of each variant.
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { option } from './args';

export type PlacementMode = 'same' | 'split' | 'none';

export interface Placement {
  receiver: string;
  sender: string;
}

export function describePlacement(mode: PlacementMode): string {
  const [a, b] = cpus();
  if (mode === 'same') return `receiver and sender on CPU ${a} (taskset, all threads)`;
  if (mode === 'split') return `receiver on CPU ${a}, sender on CPU ${b} (taskset, all threads)`;
  return 'unpinned';
}

function cpus(): [string, string] {
  const n = os.cpus().length;
  return [String(n - 1), String(Math.max(0, n - 2))];
}

/** undefined: leave the processes where the scheduler puts them. */
export function placementOf(mode: PlacementMode): Placement | undefined {
  const [a, b] = cpus();
  if (mode === 'same') return { receiver: a, sender: a };
  if (mode === 'split') return { receiver: a, sender: b };
  return undefined;
}

/** Whether `taskset` (util-linux) can be used. */
export function canPin(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Moves every thread of a running process to the CPU list. */
export function pin(pid: number, cpuList: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpuList, String(pid)], { stdio: 'ignore' });
}

/** Command and arguments that start a program on the CPU list (or unpinned). */
export function pinned(cpuList: string | undefined, bin: string, args: string[]): [string, string[]] {
  return cpuList === undefined ? [bin, args] : ['taskset', ['-c', cpuList, bin, ...args]];
}

/** --placement same|split|none (default same); 'none' where taskset cannot be used. */
export function placementMode(): PlacementMode {
  const mode = option('--placement') ?? 'same';
  if (mode !== 'same' && mode !== 'split' && mode !== 'none') throw new Error('--placement is same, split or none');
  if (mode !== 'none' && !canPin()) {
    console.log('taskset not usable: running unpinned');
    return 'none';
  }
  return mode;
}
