// The message-rate part of bench:rdma: 8-byte appends over provider 'verbs' in the Soft-RoCE
// guest, one sender with 64 or 256 in flight. Its rows, amounts and target; the shapes and the
// receiver's mailbox are bench:tcp's (bench/tcp/rate-config.ts).
import { MESSAGE_BYTES, RECORDS_PER_BUFFER, type RateRatio, type RateScenario, type RateVariant } from '../tcp/rate-config';

export const RATE_REPETITIONS = 3;

export const RATE_VARIANTS: RateVariant[] = [
  { id: 'counter', label: 'mailbox put, counter (verbs, loop)', transport: 'mailbox', counter: true, progress: 'loop' },
  { id: 'promise', label: 'mailbox put, promise (verbs, loop)', transport: 'mailbox', progress: 'loop' },
  { id: 'raw-counter', label: 'raw write, counter (verbs, loop)', transport: 'raw', counter: true, progress: 'loop' },
  { id: 'raw', label: 'raw write, promise (verbs, loop)', transport: 'raw', progress: 'loop' },
  { id: 'perftest', label: 'perftest ib_write_bw -s 8', transport: 'perftest' },
];

/**
 * Under emulation JavaScript runs ~8x slower than on the host and Soft-RoCE adds its own
 * per-message work, so one 64 KiB buffer of records per measurement keeps a repetition of
 * the whole part within a minute or so.
 */
export function rateScenarios(quick: boolean): RateScenario[] {
  const single = { kind: 'bw' as const, size: MESSAGE_BYTES, senders: 1 };
  const count = quick ? RECORDS_PER_BUFFER / 4 : RECORDS_PER_BUFFER; // 2048 or 8192
  const warmup = quick ? 128 : 512; // about 6%
  return [
    { ...single, id: 'w64', label: 'single w64', window: 64, count, warmup },
    { ...single, id: 'w256', label: 'single w256', window: 256, count, warmup },
  ];
}

/** The target: on verbs, counted mailbox puts reach 0.8x the counted raw write's message rate. */
export const RATE_RATIOS: RateRatio[] = ['w64', 'w256'].flatMap((scenario) => [
  { of: 'counter', versus: 'raw-counter', scenario, min: 0.8 },
  { of: 'promise', versus: 'raw', scenario },
  { of: 'counter', versus: 'perftest', scenario },
]);
