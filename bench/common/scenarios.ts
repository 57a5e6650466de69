// The scenarios the transport suites (tcp, shm, rdma) share by name: a round trip of 8 bytes and
// bandwidth at a few sizes, each suite with its own amounts.
import { type Scenario } from './protocol';

export const KiB = 1 << 10;
export const MiB = 1 << 20;

/** 'rtt8': round trips of 8 bytes, one at a time. */
export function rtt8(count: number, warmup: number): Scenario {
  return { id: 'rtt8', label: 'RTT 8 B', kind: 'rtt', size: 8, window: 1, count, warmup };
}

/** Puts of `size` bytes (a multiple of KiB), `window` in flight: id bw64k, bw1m, ...; label '64 KiB', '1 MiB', .... */
export function bandwidth(size: number, window: number, count: number, warmup: number): Scenario {
  const [n, unit] = size >= MiB ? [size / MiB, 'MiB'] : [size / KiB, 'KiB'];
  return { id: `bw${n}${unit[0].toLowerCase()}`, label: `${n} ${unit}`, kind: 'bw', size, window, count, warmup };
}
