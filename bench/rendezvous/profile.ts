// node dist/bench/rendezvous/profile.js [--placement same|split] [--scenarios ..] [--transports ..] [--steps N] [--interval µs]
// [--no-counts] [--perf]: where the time goes, per step, in both children (see probe.ts, perf.ts).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { option, selected } from '../common/args';
import { type PlacementMode, canPin, placementOf } from '../common/placement';
import { revision } from '../common/results';
import { fixed, table } from '../common/stats';
import { privateRedis } from '../../support/private-redis';
import { type StepScenario, TRANSPORTS, scenarios as allScenarios } from './config';
import { readProfile } from './cpuprofile';
import { type PerfRun, parseStat, perfRecord, perfReport, perfStat, perfUsable } from './perf';
import { StepProcesses } from './processes';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CHILD = path.join(__dirname, 'child.js');
const TOP = 22;

/** Functions whose inclusive time is worth a line (synchronous parts only: V8 samples stacks). */
const INCLUSIVE = ['recv', 'recvRemote', 'request', 'allocate', 'post', 'openDynamicMailbox', 'send', 'serve', 'respond', 'putContent', 'put', 'cleanup', 'startAbort', 'RvmaError', 'onEvents', 'complete', 'resolveLabel', 'list', 'encode', 'decode', 'unpackValue', 'packValue', 'parseKey', 'contentArrived', 'Wait', 'checkReceived'];

function printWindow(dir: string, base: string): void {
  const counts = JSON.parse(fs.readFileSync(path.join(dir, `${base}.json`), 'utf8')) as {
    role: string;
    steps: number;
    wallUsPerStep: number;
    cpuUsPerStep: number;
    mainThreadCpuUsPerStep: number;
    faultsPerStep: number;
    perStep: Record<string, number>;
  };
  const prof = readProfile(path.join(dir, `${base}.cpuprofile`), INCLUSIVE);
  const us = (v: number): string => fixed(v / counts.steps, 2);
  const pct = (v: number): string => `${fixed((100 * v) / prof.totalUs, 1)}%`;
  console.log(`\n-- ${counts.role}: ${counts.steps} steps; per step ${fixed(counts.wallUsPerStep, 1)} µs wall, ${fixed(counts.cpuUsPerStep, 1)} µs CPU (process.cpuUsage), ` +
      `of it ${fixed(counts.mainThreadCpuUsPerStep, 1)} µs on the main thread (blocked ${fixed(100 - (100 * counts.mainThreadCpuUsPerStep) / counts.wallUsPerStep, 1)}% of the wall time), ` +
      `${fixed(counts.faultsPerStep, 2)} minor faults`);
  console.log('counts per step:');
  console.log(table([['what', 'per step'], ...Object.entries(counts.perStep).map(([k, v]) => [k, fixed(v, 3)])]));
  const sorted = (m: Map<string, number>): [string, number][] => [...m].sort((a, b) => b[1] - a[1]);
  console.log(`\nCPU profile: ${fixed(prof.totalUs / counts.steps, 1)} µs sampled per step; self time by file group (µs per step, share):`);
  console.log(table([['group', 'µs/step', 'share'], ...sorted(prof.byGroup).slice(0, TOP).map(([k, v]) => [k, us(v), pct(v)])]));
  console.log(`\nself time by function, top ${TOP}:`);
  console.log(table([['function', 'µs/step', 'share'], ...sorted(prof.byFunction).slice(0, TOP).map(([k, v]) => [k, us(v), pct(v)])]));
  console.log('\ninclusive (on the stack) time of chosen function names, µs per step:');
  console.log(table([['function', 'µs/step', 'share'], ...sorted(prof.inclusive).filter(([, v]) => v > 0).map(([k, v]) => [k, us(v), pct(v)])]));
}

type Role = 'producer' | 'consumer';
type Recording = Record<Role, { record: PerfRun; stat: PerfRun }>;

function startPerf(dir: string, index: number, pids: Record<Role, number>): Recording {
  const one = (role: Role) => ({ record: perfRecord(pids[role], path.join(dir, `${role}-${index}.perf.data`)), stat: perfStat(pids[role]) });
  return { producer: one('producer'), consumer: one('consumer') };
}

async function stopPerf(r: Recording): Promise<Record<Role, Record<string, number>>> {
  const stat = async (role: Role) => {
    await r[role].record.stop();
    return parseStat(await r[role].stat.stop());
  };
  return { producer: await stat('producer'), consumer: await stat('consumer') };
}

function printPerf(dir: string, index: number, role: Role, stat: Record<string, number>, s: StepScenario): void {
  const steps = s.warmup + s.count;
  const line = Object.entries(stat).map(([k, v]) => `${k} ${fixed(v / steps, k === 'task-clock' ? 3 : 2)}`).join(', ');
  console.log(`\nperf stat of the ${role}, per step (task-clock in ms; perf attached around prepare..finish): ${line}`);
  const file = path.join(dir, `${role}-${index}.perf.data`);
  console.log(`perf report, self time by shared object:\n${perfReport(file, 'dso', 12)}`);
  console.log(`perf report, self time by symbol:\n${perfReport(file, 'dso,sym', 40)}`);
}

async function main(): Promise<void> {
  const mode = (option('--placement') ?? 'same') as PlacementMode;
  const steps = Number(option('--steps') ?? 6000);
  process.env.RVMA_BENCH_PROBE_INTERVAL_US = option('--interval') ?? '1000';
  const all = allScenarios(false);
  const scenarios = option('--scenarios') ? selected('--scenarios', all) : all.filter((s) => s.id === 'ping' || s.id === 'bw64k');
  const transports = selected('--transports', TRANSPORTS);
  const stamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
  const dir = path.join(os.tmpdir(), `rvma-rendezvous-profile-${stamp}`);
  const rev = revision(ROOT);
  console.log(`commit ${rev?.commit ?? 'unknown'}${rev?.librarySourcesModified ? ' (src/ or native/ modified since)' : ''}; placement ${mode}; profiles in ${dir}`);
  process.env.RVMA_BENCH_PROBE = dir; // the children inherit it
  const perf = process.argv.includes('--perf');
  if (perf && !perfUsable()) throw new Error('--perf: perf is not installed');
  if (perf || process.argv.includes('--no-counts')) process.env.RVMA_BENCH_PROBE_COUNTS = '0';
  if (perf) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --perf-basic-prof`.trim();
  const redis = await privateRedis();
  const procs = await StepProcesses.start(CHILD, redis.url, `bench-rendezvous-profile-${process.pid}`);
  try {
    if (mode !== 'none' && canPin()) procs.pin(placementOf(mode));
    let index = 0;
    for (const s of scenarios) {
      for (const t of transports) {
        // --steps is for the small tensors; larger ones take fewer steps for the same bytes (at least 64).
        const n = Math.max(64, Math.round((steps * Math.min(1, (256 << 10) / (s.size * s.tensors))) / 4) * 4);
        const scenario: StepScenario = { ...s, transport: t.id, count: n, warmup: Math.max(16, n >> 3) };
        const recording = perf ? startPerf(dir, index, procs.pids) : undefined;
        const m = await procs.measure(scenario);
        const stats = recording && (await stopPerf(recording));
        const value = s.kind === 'rtt' ? `${fixed(m.medianOpNs! / 1000, 1)} µs median round trip` : `${fixed(m.bytes / (1 << 20) / (m.elapsedNs / 1e9), 0)} MiB/s`;
        console.log(`\n===== ${t.label}, ${s.label}: ${value} (probe and profiler running)`);
        // Let the children write their files.
        await new Promise((r) => setTimeout(r, 300));
        printWindow(dir, `producer-${index}`);
        if (stats) printPerf(dir, index, 'producer', stats.producer, scenario);
        printWindow(dir, `consumer-${index}`);
        if (stats) printPerf(dir, index, 'consumer', stats.consumer, scenario);
        index++;
      }
    }
  } finally {
    await procs.stop();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
