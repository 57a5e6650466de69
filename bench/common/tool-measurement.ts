// An external tool's own figures as a Measurement (ucx_perftest, perftest): bandwidth in MiB/s,
// or round trips from the half round trips in µs that their latency tests report.
import { type Measurement } from './protocol';

/** `bytes` moved at `mibPerSecond` (the tools' MB are MiB, 2^20 bytes). */
export function bandwidthMeasurement(ops: number, bytes: number, mibPerSecond: number, reported: Record<string, number>): Measurement {
  return { ops, bytes, elapsedNs: (bytes / (mibPerSecond * 2 ** 20)) * 1e9, reported };
}

/** `ops` round trips, each twice the half round trip reported (average, median and, if given, 99th percentile). */
export function roundTripMeasurement(
  ops: number,
  bytes: number,
  halfUs: { average: number; median: number; p99?: number },
  reported: Record<string, number>,
): Measurement {
  const roundTripNs = (usec: number): number => 2 * usec * 1000;
  return {
    ops,
    bytes,
    elapsedNs: roundTripNs(halfUs.average) * ops,
    medianOpNs: roundTripNs(halfUs.median),
    ...(halfUs.p99 === undefined ? {} : { p99OpNs: roundTripNs(halfUs.p99) }),
    reported,
  };
}
