// The message-rate part of bench:tcp: 8-byte messages over loopback, many in flight, from one
// sender or from 16 into one receiver. Its rows, scenarios, amounts and targets, and the shapes
// bench:rdma's rate part shares.
import type { ProgressMode } from '../../src';
import { type Scenario, type Target, type Variant } from '../common/protocol';

export type RateTransport = 'mailbox' | 'raw' | 'net' | 'ucx' | 'perftest';

export interface RateVariant extends Variant<RateTransport> {
  /** Completion by a sender-side put counter instead of a promise per operation. */
  counter?: boolean;
}

/** A row an external program measures: its own figures, no CPU times, no receiver's count. */
export function byTool(v: RateVariant): boolean {
  return v.transport === 'ucx' || v.transport === 'perftest';
}

export interface RateScenario extends Scenario {
  /** Sender processes; with more than one they all put into the same receiver mailbox. */
  senders: number;
}

/** A scenario as the rate children get it: with the row it is measured for. */
export interface RowScenario extends RateScenario {
  row: RateVariant;
}

/** What the rate receiver hands its senders: a mailbox vaddr, a region key, or its net.Socket port. */
export interface RateTarget extends Target {
  netPort?: number;
}

/** What a rate child process is started with: its progress mode and, for a sender, its index. */
export interface RateChildSpec {
  progress: ProgressMode;
  index?: number;
}

export const RATE_REPETITIONS = 3;
export const MESSAGE_BYTES = 8;

/** The receiver's mailbox buffers: 8192 appended records each, retired when full. */
export const MAILBOX_BUFFER_BYTES = 64 << 10;
export const RECORDS_PER_BUFFER = MAILBOX_BUFFER_BYTES / MESSAGE_BYTES;
export const MAILBOX_BUFFERS = 64;

const SINGLE_ONLY = ['w64', 'w256'];

export const RATE_VARIANTS: RateVariant[] = [
  { id: 'counter', label: 'mailbox put, counter (loop)', transport: 'mailbox', counter: true, progress: 'loop' },
  {
    id: 'counter-thread',
    label: 'mailbox put, counter (thread)',
    transport: 'mailbox',
    counter: true,
    progress: 'thread',
    only: SINGLE_ONLY,
  },
  { id: 'promise', label: 'mailbox put, promise (loop)', transport: 'mailbox', progress: 'loop' },
  { id: 'raw', label: 'raw write, promise (loop)', transport: 'raw', progress: 'loop' },
  { id: 'raw-counter', label: 'raw write, counter (loop)', transport: 'raw', counter: true, progress: 'loop' },
  { id: 'net', label: 'node net.Socket, cumulative acks', transport: 'net' },
  { id: 'ucx', label: 'UCX ucx_perftest tag_bw (UCX_TLS=tcp)', transport: 'ucx' },
];

/**
 * With 16 senders the time ends when the receiver sees the last message, and it sees a
 * mailbox's messages when their buffer retires: every per-sender amount is a multiple of 512
 * (16 x 512 = one buffer), so the warm-up and the timed part each end on a full buffer. Other
 * totals still count exactly: once the senders are done, the receiver ends the epoch of a
 * partly filled last buffer.
 */
export function rateScenarios(quick: boolean): RateScenario[] {
  const single = { kind: 'bw' as const, size: MESSAGE_BYTES, senders: 1 };
  const count = quick ? 2 * RECORDS_PER_BUFFER : 24 * RECORDS_PER_BUFFER; // 16,384 or 196,608
  const warmup = quick ? RECORDS_PER_BUFFER / 8 : RECORDS_PER_BUFFER; // about 5%
  return [
    { ...single, id: 'w64', label: 'single w64', window: 64, count, warmup },
    { ...single, id: 'w256', label: 'single w256', window: 256, count, warmup },
    {
      id: 'many',
      label: '16 senders w64',
      kind: 'bw',
      size: MESSAGE_BYTES,
      senders: 16,
      window: 64,
      count: quick ? 8192 : 98_304, // per sender
      warmup: quick ? 512 : 4096,
    },
  ];
}

/** A ratio of medians (of over versus) at one scenario; with min, a target. */
export interface RateRatio {
  of: string;
  versus: string;
  scenario: string;
  min?: number;
}

/** An absolute target: a row's median at a scenario, in messages/s. */
export interface RateGoal {
  row: string;
  scenario: string;
  min: number;
}

export const RATE_RATIOS: RateRatio[] = [
  { of: 'counter', versus: 'ucx', scenario: 'w64', min: 1.0 },
  { of: 'counter', versus: 'ucx', scenario: 'w256', min: 1.0 },
  { of: 'counter', versus: 'ucx', scenario: 'many' },
  ...['w64', 'w256', 'many'].flatMap((scenario) =>
    ['promise', 'raw', 'net'].map((versus) => ({ of: 'counter', versus, scenario })),
  ),
  { of: 'raw-counter', versus: 'raw', scenario: 'w64' },
  { of: 'counter-thread', versus: 'counter', scenario: 'w64' },
];

export const RATE_GOALS: RateGoal[] = [
  { row: 'counter', scenario: 'w64', min: 1_000_000 },
  { row: 'promise', scenario: 'w64', min: 300_000 },
  { row: 'counter', scenario: 'many', min: 1_000_000 },
];
