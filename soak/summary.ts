// The end of a soak: one screen for a person (operations, faults, failures by code, findings,
// memory and descriptors per role, hostile impact) and the same as JSON in a results file.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { FinalChecks } from './checks';
import type { Cluster } from './cluster';
import type { FaultInjector } from './faults';

export interface SummaryInput {
  cluster: Cluster;
  injector: FaultInjector;
  checks: FinalChecks;
  seconds: number;
  interrupted: string | undefined;
}

const sum = (c: Cluster, kind: string, key: string): number => c.roles.filter((r) => r.plan.kind === kind).reduce((n, r) => n + (r.totals[key] ?? 0), 0);
const n = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');
const mb = (x: number): string => (Number.isFinite(x) ? x.toFixed(0) : '-');

export function summaryJson(s: SummaryInput): Record<string, unknown> {
  const c = s.cluster;
  const failures: Record<string, Record<string, number>> = {};
  for (const [code, areas] of c.failures) failures[code] = Object.fromEntries(areas);
  return {
    date: new Date().toISOString(),
    verdict: c.findings.length === 0 && !s.interrupted ? 'pass' : 'fail',
    interrupted: s.interrupted,
    options: c.options,
    seconds: Math.round(s.seconds),
    machine: { cpus: os.cpus().length, node: process.version, kernel: `${os.type()} ${os.release()}`, loadavg: os.loadavg() },
    roles: c.roles.map((r) => ({ role: r.name, kind: r.plan.kind, transport: r.plan.transport, progress: r.plan.progress, incarnations: r.incarnation + 1, stats: r.totals })),
    operations: {
      puts: s.checks.puts,
      epochs: {
        completions: sum(c, 'sink', 'completions'),
        empty: sum(c, 'sink', 'emptyEpochs'),
        records: sum(c, 'sink', 'records'),
        mismatches: sum(c, 'sink', 'epochMismatches'),
        strayWords: sum(c, 'sink', 'strayWords'),
        corruptRecords: sum(c, 'sink', 'corruptRecords'),
      },
      rendezvous: {
        steps: sum(c, 'consumer', 'steps'),
        tensors: sum(c, 'consumer', 'tensorsReceived'),
        bytes: sum(c, 'consumer', 'bytesReceived'),
        mismatches: sum(c, 'consumer', 'mismatches'),
        sessions: c.sessionsStarted(),
        pushes: sum(c, 'producer', 'rdv.pushes'),
        requests: sum(c, 'consumer', 'rdv.requests'),
      },
      ring: {
        framesChecked: sum(c, 'ring', 'framesChecked'),
        framesForwarded: sum(c, 'ring', 'framesForwarded'),
        reforms: sum(c, 'ring', 'reforms'),
        joins: sum(c, 'ring', 'joins'),
        orderViolations: sum(c, 'ring', 'orderViolations'),
      },
    },
    faults: { counts: Object.fromEntries(s.injector.counts), log: s.injector.log },
    events: Object.fromEntries(c.events),
    failures,
    findings: c.findings,
    memory: s.checks.memory,
    growthNote: s.checks.growthNote,
    fds: s.checks.fds,
    hostile: s.injector.impacts,
  };
}

/** The one-screen summary. */
export function summaryText(s: SummaryInput, resultsFile: string | undefined): string {
  const c = s.cluster;
  const p = s.checks.puts;
  const lines: string[] = [];
  const kinds = (kind: string): string => c.roles.filter((r) => r.plan.kind === kind).length.toString();
  lines.push(
    `rvma soak: ${(s.seconds / 60).toFixed(1)} min, seed ${c.options.seed}, ${c.roles.length} endpoint processes ` +
      `(${kinds('sink')} sinks, ${kinds('sender')} senders, ${c.plan.pairs.length} rendezvous pair(s), ring of ${kinds('ring')} over ${c.options.ringTransport}), ${os.cpus().length} CPUs` +
      (s.interrupted ? ` - INTERRUPTED: ${s.interrupted}` : ''),
  );
  lines.push('operations');
  lines.push(`  puts          ${n(p.issued)} issued: ${n(p.placed)} placed, ${n(p.refused)} refused typed; ${n(p.arrived)} arrived, ${n(p.exactlyOnce)} placed and found exactly once`);
  lines.push(
    `                ambiguous outcome: ${n(p.ambiguousArrived)} arrived / ${n(p.ambiguousNotArrived)} not; in flight when their sender was killed: ${n(p.unsettledSenderDied)}; ` +
      `placed then lost with a killed sink: ${n(p.lostWithReceiver)}; duplicates ${n(p.duplicates)}; unaccounted ${n(p.unaccounted)}`,
  );
  lines.push(
    `  epochs        ${n(sum(c, 'sink', 'completions'))} completions checked (${n(sum(c, 'sink', 'emptyEpochs'))} empty), ${n(sum(c, 'sink', 'records'))} records, ` +
      `${n(sum(c, 'sink', 'epochMismatches'))} mismatches, ${n(sum(c, 'sink', 'strayWords'))} stray words`,
  );
  lines.push(
    `  rendezvous    ${n(sum(c, 'consumer', 'steps'))} steps, ${n(sum(c, 'consumer', 'tensorsReceived'))} tensors, ${(sum(c, 'consumer', 'bytesReceived') / 2 ** 20).toFixed(1)} MiB, ` +
      `${n(sum(c, 'consumer', 'mismatches'))} mismatches, ${n(c.sessionsStarted())} session(s)`,
  );
  lines.push(
    `  ring          ${n(sum(c, 'ring', 'framesChecked'))} frames checked round trip, ${n(sum(c, 'ring', 'framesForwarded'))} forwarded, ` +
      `${n(sum(c, 'ring', 'reforms'))} reforms, ${n(sum(c, 'ring', 'joins'))} joins, ${n(sum(c, 'ring', 'orderViolations'))} out of order`,
  );
  const events = [...c.events].map(([k, v]) => `${k} ${v}`).join(', ');
  if (events) lines.push(`  processes     ${events}`);
  lines.push(`faults injected (${n([...s.injector.counts.values()].reduce((a, b) => a + b, 0))})`);
  lines.push(`  ${[...s.injector.counts].map(([k, v]) => `${k} ${v}`).join('  ') || 'none'}`);
  lines.push('failures by error code (where seen)');
  const codes = [...c.failures].sort((a, b) => total(b[1]) - total(a[1]));
  for (const [code, areas] of codes) lines.push(`  ${code.padEnd(30)} ${n(total(areas)).padStart(7)}  ${[...areas].map(([a, k]) => `${a} ${k}`).join(', ')}`);
  if (!codes.length) lines.push('  none');
  lines.push(`findings (${c.findings.length})`);
  c.findings.slice(0, 12).forEach((f, i) => lines.push(`  ${i + 1}. [${f.check}] at ${f.at} s: ${clip(f.detail, 230)}`));
  if (c.findings.length > 12) lines.push(`  ... and ${c.findings.length - 12} more (in the results file)`);
  if (s.injector.impacts.length) {
    lines.push('hostile clients (victim: RSS MiB before > peak > after; heap MiB after GC before > after; fds before > peak > after; CPU; greets a new connection after)');
    for (const i of s.injector.impacts) {
      lines.push(
        `  ${i.kind.padEnd(21)} ${i.victim.padEnd(11)} ${i.rssBeforeMiB} > ${i.rssPeakMiB} > ${i.rssAfterMiB}  ${i.heapBeforeMiB} > ${i.heapAfterMiB}  ` +
          `${i.fdsBefore} > ${i.fdsPeak} > ${i.fdsAfter}  ${(100 * i.cpuShare).toFixed(0)}%  ${i.probeAfterMs >= 0 ? `${i.probeAfterMs} ms` : 'no'}`,
      );
    }
  }
  lines.push(`memory (RSS MiB min/max; first minute max > second half max)${s.checks.growthNote ? ` - ${s.checks.growthNote}` : ''}; fds (min/max; warm-up > quiet end)`);
  const fdOf = new Map(s.checks.fds.map((f) => [f.role, f]));
  for (const m of s.checks.memory) {
    const f = fdOf.get(m.role);
    const mark = m.grew ? '  GREW' : '';
    const fdMark = f?.grew ? '  FD GROWTH' : '';
    lines.push(
      `  ${m.role.padEnd(11)} ${`${mb(m.minMiB)}/${mb(m.maxMiB)}`.padStart(9)}  ${mb(m.firstMinuteMaxMiB)} > ${mb(m.secondHalfMaxMiB)}${mark}`.padEnd(42) +
        (f ? `${`${n(f.min)}/${n(f.max)}`.padStart(10)}  ${n(f.baseline)} > ${f.quiet === undefined ? '-' : n(f.quiet)}${fdMark}` : ''),
    );
  }
  if (resultsFile) lines.push(`results: ${resultsFile}`);
  const verdict = c.findings.length === 0 && !s.interrupted;
  lines.push(verdict ? 'PASS: no invariant was violated' : `FAIL: ${c.findings.length} finding(s)${s.interrupted ? ', interrupted' : ''}`);
  return lines.join('\n');
}

function total(areas: Map<string, number>): number {
  let t = 0;
  for (const v of areas.values()) t += v;
  return t;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 3)}...`;
}

/** Writes the JSON to dir/soak-<date>.json; returns the path. */
export function saveSummary(dir: string, json: Record<string, unknown>): string {
  fs.mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
  const file = path.join(dir, `soak-${stamp}.json`);
  fs.writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  return file;
}
