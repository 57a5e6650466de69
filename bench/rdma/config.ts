// What bench:rdma measures inside the Soft-RoCE guest: scenarios, variants (table rows), the
// ratios shown and their target. Soft-RoCE under software emulation moves a few tens of MB/s
// and JavaScript runs ~8x slower than on the host, so the amounts are megabytes, not gigabytes:
// one repetition of everything takes well under a minute.
import { type Variant } from '../common/protocol';
import { type ReportSpec, type TargetSpec } from '../common/report';
import { KiB, MiB, mailboxReport, transportScenarios } from '../common/transport-config';

export type Transport = 'mailbox' | 'raw' | 'perftest';

export const WINDOW = 4;
export const REPETITIONS = 5;

/** The guest's RDMA device, its IPv4 address and that address's GID index (scripts/rdma-vm). */
export const DEVICE = process.env.RVMA_VM_RDMA_DEV ?? 'rxe0';
export const ADDRESS = process.env.RVMA_VM_RDMA_ADDR ?? '10.77.0.1';
export const GID_INDEX = 1;

const BANDWIDTH = ['bw64k', 'bw1m', 'bw4m'];

export const SCENARIOS = transportScenarios(WINDOW, [1000, 100], [[64 * KiB, 400, 40], [MiB, 40, 8], [4 * MiB, 12, 4]]);

export const VARIANTS: Variant<Transport>[] = [
  { id: 'mailbox', label: 'mailbox put (verbs, loop)', transport: 'mailbox', progress: 'loop' },
  { id: 'raw', label: 'raw write (verbs, loop)', transport: 'raw', progress: 'loop' },
  { id: 'perftest', label: 'perftest ib_write_lat / ib_write_bw', transport: 'perftest' },
  // 64 KiB puts eagerly (one WRITE_WITH_IMM and a copy) instead of RTS, RDMA READ, FIN: what
  // the default 16 KiB eager limit costs at 64 KiB, at 4 MiB of ring per connection.
  {
    id: 'mailbox-eager64k',
    label: 'mailbox put (verbs, loop, 64 KiB eager)',
    transport: 'mailbox',
    progress: 'loop',
    verbs: { slotBytes: 64 * KiB + 32 },
    only: ['bw64k'],
  },
  // Every large put registers its source and the receiver's buffer anew, as without the cache.
  {
    id: 'mailbox-nocache',
    label: 'mailbox put (verbs, loop, no registration cache)',
    transport: 'mailbox',
    progress: 'loop',
    verbs: { registrationCacheBytes: 0 },
    only: BANDWIDTH,
  },
  // Round trips under thread progress, without and with busy polling. The window (2 ms) spans
  // a round trip under emulation (about 1 ms), so the reply is polled, not waited for.
  { id: 'mailbox-thread', label: 'mailbox put (verbs, thread)', transport: 'mailbox', progress: 'thread', only: ['rtt8'] },
  {
    id: 'mailbox-busypoll',
    label: 'mailbox put (verbs, thread, busy poll 2 ms)',
    transport: 'mailbox',
    progress: 'thread',
    verbs: { busyPollUs: 2000 },
    only: ['rtt8'],
  },
];

/** The target: mailbox puts reach 0.9x the raw verbs write from 64 KiB up. */
export const TARGETS: TargetSpec[] = BANDWIDTH.map((scenario) => ({ versus: 'raw', scenario, min: 0.9 }));

export const REPORT: ReportSpec = mailboxReport(SCENARIOS, VARIANTS, {
  extra: [
    { id: 'mailbox-eager64k', column: '64 KiB eager' },
    { id: 'mailbox-nocache', column: 'no reg. cache' },
    { id: 'mailbox-thread', column: 'thread' },
    { id: 'mailbox-busypoll', column: 'thread, busy poll' },
  ],
  ratios: ['raw', 'perftest'].flatMap((versus) => ['rtt8', ...BANDWIDTH].map((scenario) => ({ versus, scenario }))),
  targets: TARGETS,
  notes: [
    `perftest: round trip = 2 x ib_write_lat's t_typical (it reports half its ping-pong); ` +
      `ib_write_bw -t ${WINDOW} (as many writes in flight), its BW average.`,
  ],
});
