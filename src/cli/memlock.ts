// The locked-memory limit and what it lets verbs register: registered memory is pinned and
// counts against RLIMIT_MEMLOCK, unless the process holds CAP_IPC_LOCK (root usually does).
import * as fs from 'node:fs';

export interface Memlock {
  /** Bytes, or null for unlimited; undefined where /proc does not tell. */
  soft?: number | null;
  hard?: number | null;
  /** CAP_IPC_LOCK in the effective set: the limit does not apply. */
  ipcLock: boolean;
  /** What may be registered, in words. */
  registrable: string;
}

const CAP_IPC_LOCK = 14n;

function limit(text: string): number | null {
  return text === 'unlimited' ? null : Number(text);
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

export function readMemlock(limits = '/proc/self/limits', status = '/proc/self/status'): Memlock {
  let soft: number | null | undefined;
  let hard: number | null | undefined;
  try {
    const line = fs.readFileSync(limits, 'utf8').split('\n').find((l) => l.startsWith('Max locked memory'));
    const fields = line?.slice('Max locked memory'.length).trim().split(/\s+/);
    if (fields && fields.length >= 2) [soft, hard] = [limit(fields[0]), limit(fields[1])];
  } catch {
    // not Linux, or /proc is hidden: the limit stays unknown
  }
  let ipcLock = false;
  try {
    const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync(status, 'utf8'))?.[1];
    ipcLock = capEff !== undefined && ((BigInt(`0x${capEff}`) >> CAP_IPC_LOCK) & 1n) === 1n;
  } catch {
    // as above
  }
  const registrable = ipcLock
    ? 'any amount (CAP_IPC_LOCK: the limit does not apply)'
    : soft === null
      ? 'any amount (no limit)'
      : soft === undefined
        ? 'unknown (the limit could not be read)'
        : `${formatBytes(soft)} in all, regions and the verbs provider's own buffers together (raise it with ulimit -l or limits.conf)`;
  return { soft, hard, ipcLock, registrable };
}
