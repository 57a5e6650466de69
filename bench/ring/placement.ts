// CPU placement of the ranks in the common modes (same: one CPU; split: dealt round the CPUs; none:
// unpinned); --placement takes a list, all measured in one run (default: same,none).
import * as os from 'node:os';
import { option } from '../common/args';
import { canPin, type PlacementMode } from '../common/placement';

const MODES: PlacementMode[] = ['same', 'split', 'none'];

/** CPU list per rank: the last CPU for 'same', CPUs dealt from the last for 'split', all CPUs for 'none'. */
export function rankCpus(mode: PlacementMode, ranks: number): string[] {
  const n = os.cpus().length;
  if (mode === 'same') return Array(ranks).fill(String(n - 1));
  if (mode === 'split') return [...Array(ranks).keys()].map((r) => String(n - 1 - (r % n)));
  return Array(ranks).fill(n > 1 ? `0-${n - 1}` : '0');
}

export function describeRanks(mode: PlacementMode, ranks: number): string {
  const cpus = rankCpus(mode, ranks);
  if (mode === 'same') return `same CPU: all ${ranks} ranks on CPU ${cpus[0]} (taskset, all threads)`;
  if (mode === 'split') return `split: ${cpus.map((c, r) => `rank ${r} on CPU ${c}`).join(', ')} (taskset, all threads)`;
  return `spread: unpinned, the scheduler places the ranks on the ${os.cpus().length} CPUs`;
}

/** Short name in tables. */
export function placementName(mode: PlacementMode): string {
  return mode === 'same' ? 'same CPU' : mode === 'split' ? 'split' : 'spread';
}

/** --placement same,none (default); only 'none' where taskset cannot be used. */
export function placementModes(): PlacementMode[] {
  const modes = (option('--placement') ?? 'same,none').split(',') as PlacementMode[];
  const unknown = modes.filter((m) => !MODES.includes(m));
  if (unknown.length) throw new Error(`--placement: unknown ${unknown.join(', ')} (known: ${MODES.join(', ')})`);
  if (modes.some((m) => m !== 'none') && !canPin()) {
    console.log('taskset not usable: running unpinned only');
    return ['none'];
  }
  return [...new Set(modes)];
}
