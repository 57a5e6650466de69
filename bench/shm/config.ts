// What bench:shm measures on one host: scenarios, variants (table rows), the ratios shown and
// their targets. Amounts are about a GiB per bandwidth measurement: a tenth of a second over shm.
import { type Variant } from '../common/protocol';
import { type ReportSpec, type TargetSpec } from '../common/report';
import { KiB, MiB, mailboxReport, transportScenarios } from '../common/transport-config';
import { ONE_CPU_POLL_ITERATIONS, UCX_TLS } from './ucx';

export type Transport = 'mailbox' | 'raw' | 'memcpy' | 'ucx';

export const WINDOW = 4;
export const REPETITIONS = 5;
export const BUSY_POLL_US = 200;

const BANDWIDTH = ['bw64k', 'bw1m', 'bw16m'];

export const SCENARIOS = transportScenarios(WINDOW, [10000, 500], [[64 * KiB, 16384, 1024], [MiB, 1024, 64], [16 * MiB, 64, 8]]);

export const VARIANTS: Variant<Transport>[] = [
  { id: 'mailbox', label: 'mailbox put (shm, loop)', transport: 'mailbox', provider: 'shm', progress: 'loop' },
  { id: 'raw', label: 'raw write (shm, loop)', transport: 'raw', provider: 'shm', progress: 'loop' },
  { id: 'tcp', label: 'mailbox put (tcp loopback, loop)', transport: 'mailbox', provider: 'tcp', progress: 'loop' },
  { id: 'memcpy', label: 'memcpy (C, 1 thread)', transport: 'memcpy', only: BANDWIDTH },
  {
    id: 'native',
    label: 'mailbox put (shm, loop, allocBuffer source)',
    transport: 'mailbox',
    provider: 'shm',
    progress: 'loop',
    source: 'native',
    only: BANDWIDTH,
  },
  { id: 'memcpy-native', label: 'memcpy (C, 1 thread, huge-page source)', transport: 'memcpy', source: 'native', only: BANDWIDTH },
  {
    id: 'memcpy-window',
    label: `memcpy (C, 1 thread, ${WINDOW} sources into the receiver's buffers in turn)`,
    transport: 'memcpy',
    rotate: true,
    only: BANDWIDTH,
  },
  {
    id: 'always',
    label: "mailbox put (shm, loop, shm.senderWrites 'always')",
    transport: 'mailbox',
    provider: 'shm',
    progress: 'loop',
    shm: { senderWrites: 'always' },
  },
  {
    id: 'pulled',
    label: "mailbox put (shm, loop, pulled: shm.senderWrites 'never')",
    transport: 'mailbox',
    provider: 'shm',
    progress: 'loop',
    shm: { senderWrites: 'never' },
  },
  { id: 'ucx', label: 'UCX ucx_perftest (poll)', transport: 'ucx' },
  { id: 'ucx-sleep', label: 'UCX ucx_perftest (-E sleep)', transport: 'ucx', args: ['-E', 'sleep'] },
  { id: 'thread', label: 'mailbox put (shm, thread)', transport: 'mailbox', provider: 'shm', progress: 'thread', only: ['rtt8'] },
  {
    id: 'busypoll',
    label: `mailbox put (shm, loop, busy poll ${BUSY_POLL_US} µs)`,
    transport: 'mailbox',
    provider: 'shm',
    progress: 'loop',
    shm: { busyPollUs: BUSY_POLL_US },
    only: ['rtt8'],
  },
  {
    id: 'busypoll-thread',
    label: `mailbox put (shm, thread, busy poll ${BUSY_POLL_US} µs)`,
    transport: 'mailbox',
    provider: 'shm',
    progress: 'thread',
    shm: { busyPollUs: BUSY_POLL_US },
    only: ['rtt8'],
  },
];

export const TARGETS: TargetSpec[] = [
  { versus: 'memcpy', scenario: 'bw16m', min: 0.85 },
  // From allocBuffer memory (the arena below 2 MiB; see docs/api.md), against a memcpy of the same sizes.
  { of: 'native', versus: 'memcpy', scenario: 'bw16m', min: 0.85 },
  { of: 'native', versus: 'memcpy', scenario: 'bw1m', min: 0.6 },
  { versus: 'ucx', scenario: 'bw1m', min: 1.5 },
  { versus: 'ucx', scenario: 'bw16m', min: 1.5 },
  { of: 'native', versus: 'ucx', scenario: 'bw1m', min: 1.0 },
  ...BANDWIDTH.map((scenario) => ({ versus: 'raw', scenario, min: 0.95 })),
  { of: 'busypoll', versus: 'ucx', scenario: 'rtt8', max: 1.0 },
  { versus: 'tcp', scenario: 'rtt8', max: 1.0 },
];

export const REPORT: ReportSpec = mailboxReport(SCENARIOS, VARIANTS, {
  subjectColumn: 'ratio',
  ratios: [
    ...BANDWIDTH.map((scenario) => ({ versus: 'memcpy', scenario })),
    ...BANDWIDTH.map((scenario) => ({ of: 'native', versus: 'memcpy', scenario })),
    ...BANDWIDTH.map((scenario) => ({ of: 'native', versus: 'memcpy-native', scenario })),
    ...BANDWIDTH.map((scenario) => ({ versus: 'memcpy-window', scenario })),
    ...BANDWIDTH.map((scenario) => ({ of: 'native', versus: 'memcpy-window', scenario })),
    ...BANDWIDTH.map((scenario) => ({ versus: 'pulled', scenario })),
    ...BANDWIDTH.map((scenario) => ({ of: 'always', versus: 'pulled', scenario })),
    ...BANDWIDTH.map((scenario) => ({ of: 'native', versus: 'ucx', scenario })),
    ...['rtt8', ...BANDWIDTH].map((scenario) => ({ versus: 'ucx', scenario })),
    ...['rtt8', ...BANDWIDTH].map((scenario) => ({ versus: 'raw', scenario })),
    ...['rtt8', ...BANDWIDTH].map((scenario) => ({ versus: 'tcp', scenario })),
    { of: 'busypoll', versus: 'ucx', scenario: 'rtt8' },
    { of: 'busypoll', versus: 'ucx-sleep', scenario: 'rtt8' },
    { of: 'busypoll', versus: 'tcp', scenario: 'rtt8' },
    ...['rtt8', ...BANDWIDTH].map((scenario) => ({ versus: 'ucx-sleep', scenario })),
  ],
  targets: TARGETS,
  names: {
    ucx: 'UCX',
    'ucx-sleep': 'UCX(sleep)',
    busypoll: 'mailbox(busy poll)',
    native: 'mailbox(allocBuffer)',
    'memcpy-native': 'memcpy(huge-page source)',
    'memcpy-window': 'memcpy(window)',
    pulled: 'mailbox(pulled)',
    always: 'mailbox(writes always)',
  },
  notes: [
    `UCX: UCX_TLS=${UCX_TLS}; its RTT is 2 x tag_lat's median (tag_lat reports half a round trip); ` +
      `bandwidth is tag_bw -O ${WINDOW}, overall. Default wait mode polls; -E sleep waits on an fd.`,
    `Polling UCX with both processes on one CPU runs at most ${ONE_CPU_POLL_ITERATIONS} iterations ` +
      '(the two take turns a scheduler slice at a time).',
    `busy poll: shm.busyPollUs ${BUSY_POLL_US} on both sides (loop: the event loop spins; thread: the progress thread); ` +
      'the rows without it block between messages.',
  ],
});
