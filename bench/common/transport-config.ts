// What the transport suites (tcp, shm, rdma) share in their configuration: scenarios by the same
// names (a round trip of 8 bytes, bandwidth at a few sizes) with each suite's own amounts, and a
// report of the mailbox row against the others.
import { scenarioName } from './knobs';
import { type Scenario, type Variant } from './protocol';
import { type ReportSpec } from './report';

export const KiB = 1 << 10;
export const MiB = 1 << 20;

/**
 * rtt8 (round trips of 8 bytes, one at a time) with its [count, warmup], then bandwidth
 * (bw64k, bw1m, ...) at each [size, count, warmup] with `window` puts in flight.
 */
export function transportScenarios(window: number, rtt: [number, number], sizes: [number, number, number][]): Scenario[] {
  const [count, warmup] = rtt;
  return [
    { ...scenarioName('rtt', 8), kind: 'rtt', size: 8, window: 1, count, warmup },
    ...sizes.map(([size, count, warmup]): Scenario => ({ ...scenarioName('bw', size), kind: 'bw', size, window, count, warmup })),
  ];
}

/** The report of a transport suite: every ratio of the 'mailbox' variant, in the column 'mailbox(loop)' unless named. */
export function mailboxReport(
  scenarios: Scenario[],
  variants: Variant[],
  spec: Omit<ReportSpec, 'scenarios' | 'variants' | 'subject' | 'subjectColumn' | 'extra'> & Partial<Pick<ReportSpec, 'subjectColumn' | 'extra'>>,
): ReportSpec {
  return { scenarios, variants, subject: 'mailbox', subjectColumn: 'mailbox(loop)', extra: [], ...spec };
}
