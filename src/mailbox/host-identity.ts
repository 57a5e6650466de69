// Which host and network namespace this process runs in: two endpoints whose records carry
// the same identity can reach each other's abstract unix sockets, so shm can join them.
import * as fs from 'node:fs';

let cached: string | undefined | null = null;

/** boot id + network namespace, or undefined where /proc does not tell (no shm by directory then). */
export function hostIdentity(): string | undefined {
  if (cached !== null) return cached;
  try {
    const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const net = fs.readlinkSync('/proc/self/ns/net');
    cached = boot && net ? `${boot}/${net}` : undefined;
  } catch {
    cached = undefined;
  }
  return cached;
}
