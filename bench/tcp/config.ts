// What one run measures: scenarios (message size, window, amounts) and variants (table rows),
// and what its report shows: the ratios and their targets.
import { type Variant } from '../common/protocol';
import { type ReportSpec, type TargetSpec } from '../common/report';
import { KiB, MiB, mailboxReport, transportScenarios } from '../common/transport-config';

export type Transport = 'mailbox' | 'raw' | 'net' | 'c';

export const WINDOW = 4;
export const REPETITIONS = 5;

export const SCENARIOS = transportScenarios(WINDOW, [10000, 500], [[64 * KiB, 8192, 512], [MiB, 512, 32], [16 * MiB, 64, 8]]);

export const VARIANTS: Variant<Transport>[] = [
  { id: 'mailbox', label: 'mailbox put (loop)', transport: 'mailbox', progress: 'loop' },
  { id: 'raw', label: 'raw write (loop)', transport: 'raw', progress: 'loop' },
  { id: 'net', label: 'node net.Socket', transport: 'net' },
  { id: 'c', label: 'C sockets', transport: 'c' },
  { id: 'mailbox-thread', label: 'mailbox put (thread)', transport: 'mailbox', progress: 'thread' },
  {
    id: 'mailbox-stripes2',
    label: 'mailbox put (loop, 2 stripes)',
    transport: 'mailbox',
    progress: 'loop',
    stripes: 2,
    only: ['bw16m'],
  },
];

export const TARGETS: TargetSpec[] = [
  { versus: 'net', scenario: 'bw1m', min: 1.0 },
  { versus: 'net', scenario: 'bw16m', min: 1.0 },
  { versus: 'c', scenario: 'bw1m', min: 0.9 },
  { versus: 'c', scenario: 'bw16m', min: 0.9 },
  { versus: 'raw', scenario: 'bw64k', min: 0.95 },
  { versus: 'raw', scenario: 'bw1m', min: 0.95 },
  { versus: 'raw', scenario: 'bw16m', min: 0.95 },
  { versus: 'net', scenario: 'rtt8', max: 1.0 },
];

export const REPORT: ReportSpec = mailboxReport(SCENARIOS, VARIANTS, {
  extra: [
    { id: 'mailbox-thread', column: 'thread' },
    { id: 'mailbox-stripes2', column: '2 stripes' },
  ],
  ratios: [
    { versus: 'net', scenario: 'rtt8' },
    ...['net', 'c', 'raw'].flatMap((versus) => ['bw64k', 'bw1m', 'bw16m'].map((scenario) => ({ versus, scenario }))),
  ],
  targets: TARGETS,
  names: { c: 'C' },
});
