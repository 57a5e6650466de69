// The transports that cross-process suites (test/transport) run over: tcp on loopback, and shm
// with large puts pulled by the receiver (cma) or copied through the shared ring (copy).
import * as fs from 'node:fs';
import { Endpoint, type ProgressMode, type ShmOptions } from '../../src';
import { PROGRESS_MODES, uniqueNodeId } from './endpoints';

// Whether the kernel lets one process read another's memory (CMA, what shm pulls large puts
// with): this process may use it at all (no seccomp filter), and Yama's ptrace_scope allows it
// (0 or no Yama: any process of the same user; 1: only descendants; 2: only with
// CAP_SYS_PTRACE, which root has; 3: never).
function yamaScope(): number {
  try {
    return Number(fs.readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8').trim());
  } catch {
    return 0;
  }
}
const scope = yamaScope();
const root = process.getuid?.() === 0;
export const CMA = {
  /** A child (or a sibling) may read this process: the detail this process sees for a child peer. */
  fromOthers: Endpoint.capabilities.cma && (scope === 0 || (root && scope < 3)),
  /** This process may read a child: the detail a child sees for this process. */
  ofDescendants: Endpoint.capabilities.cma && (scope <= 1 || (root && scope < 3)),
};

export interface Transport {
  name: 'tcp' | 'shm' | 'shm-copy';
  /** A listen address nobody else uses (shm names are unique per process and per call). */
  listen(label?: string): string;
  /** Options every endpoint of a test over this transport takes, at both ends. */
  options: { shm?: ShmOptions };
  /** What endpoint.peers() reports for a peer reached over it. */
  provider: 'tcp' | 'shm';
  /** ...and as its detail: how this endpoint's large puts travel to that peer. */
  detail: '' | 'cma' | 'copy';
}

const shmName = (label: string): string => `shm://${uniqueNodeId(label)}`;

export const TRANSPORTS: Transport[] = [
  { name: 'tcp', listen: () => 'tcp://127.0.0.1:0', options: {}, provider: 'tcp', detail: '' },
  // How this process's large puts travel to a child peer (and between children).
  { name: 'shm', listen: (label = 'shm') => shmName(label), options: {}, provider: 'shm', detail: CMA.fromOthers ? 'cma' : 'copy' },
  // cma: false on either end is enough; both ends take it here, as with every option group.
  { name: 'shm-copy', listen: (label = 'shm') => shmName(label), options: { shm: { cma: false } }, provider: 'shm', detail: 'copy' },
];

export const SHM_TRANSPORTS = TRANSPORTS.filter((t) => t.provider === 'shm');

/** Bytes of each direction's ring with default shm options (ShmOptions.ringBytes). */
export const DEFAULT_RING_BYTES = 1 << 20;

/** Under the ASan/UBSan build (npm run test:asan) everything runs several times slower. */
export const SANITIZED = process.env.RVMA_SANITIZED === '1';

/** [transport name, progress mode, transport] for describe.each: '%s (%s progress)' titles. */
export type TransportCase = [string, ProgressMode, Transport];

export function transportCases(transports: Transport[] = TRANSPORTS): TransportCase[] {
  return transports.flatMap((t) => PROGRESS_MODES.map((p): TransportCase => [t.name, p, t]));
}

/** The transport's options with more shm options merged in (e.g. a smaller ring). */
export function withShm(transport: Transport, shm: ShmOptions): { shm?: ShmOptions } {
  return transport.provider === 'shm' ? { shm: { ...transport.options.shm, ...shm } } : transport.options;
}
