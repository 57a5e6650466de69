// Profiling aid (RVMA_BENCH_PROBE=<dir>, set by profile.ts): per-step counts of what a measurement costs
// and a V8 CPU profile of it, by wrapping the compiled library's exports at run time (src/ is untouched).
import * as fs from 'node:fs';
import * as inspector from 'node:inspector';
import * as path from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import * as errors from '../../src/base/errors';
import * as wait from '../../src/base/wait';
import * as nativeModule from '../../src/native';
import * as messages from '../../src/rendezvous/messages';
import { Endpoint, RedisDirectory } from '../../src';
import { mainThreadCpuMs, minorFaults } from './faults';

type Exports = Record<string, unknown>;
const counts = new Map<string, number>();
const count = (what: string, n = 1): void => void counts.set(what, (counts.get(what) ?? 0) + n);

/** new X(...) counted under name(args), the class itself unchanged for instanceof. */
function countConstructions(module: Exports, name: string, label: (args: unknown[]) => string): void {
  const original = module[name] as new (...args: unknown[]) => object;
  module[name] = new Proxy(original, {
    construct(target, args, newTarget) {
      count(label(args));
      return Reflect.construct(target, args, newTarget);
    },
  });
}

function countCalls<T extends object>(owner: T, name: keyof T & string, label: (args: unknown[]) => string, timed = false): void {
  const original = owner[name] as unknown as (...args: unknown[]) => unknown;
  (owner as Record<string, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
    const what = label(args);
    count(what);
    const result = original.apply(this, args);
    if (timed && result instanceof Promise) {
      const t0 = process.hrtime.bigint();
      result.then(() => count(`${what} µs (total)`, Number(process.hrtime.bigint() - t0) / 1000), () => undefined);
    }
    return result;
  };
}

const CONTROL = 0x10n;
const DYNAMIC = 1n << 63n;
const KINDS: Record<number, string> = { 1: 'TENSOR_REQUEST', 2: 'META_DATA_RESPONSE', 3: 'TENSOR_RE_REQUEST', 4: 'ERROR_STATUS' };
const shortened = (text: unknown): string => String(text).replace(/\d+/g, 'N').slice(0, 60);

function wrapLibrary(): void {
  countConstructions(errors as unknown as Exports, 'RvmaError', (a) => `new RvmaError ${a[0]}: ${shortened(a[1])}`);
  countConstructions(wait as unknown as Exports, 'Wait', (a) => {
    const o = a[1] as { timeout?: number; signal?: AbortSignal };
    return `new Wait (${o.timeout !== undefined && o.timeout !== Infinity ? 'with timeout' : 'no timeout'}): ${shortened(a[0]).replace(/ of .*| to .*| on .*/, '')}`;
  });
  const addon = nativeModule.native() as unknown as Record<string, unknown>;
  countCalls(addon, 'allocBuffer', (a) => `native allocBuffer ${Number(a[0]) >= 1 << 20 ? '>= 1 MiB' : Number(a[0]) >= 1 << 16 ? '>= 64 KiB' : '< 64 KiB'}`);
  countCalls(Endpoint.prototype, 'put', (a) => {
    const v = a[1] as bigint;
    return `Endpoint.put to ${v === CONTROL ? 'the control mailbox' : v >= DYNAMIC ? 'a one-time mailbox' : 'a bench mailbox'}`;
  });
  countCalls(Endpoint.prototype, 'openDynamicMailbox', () => 'Endpoint.openDynamicMailbox');
  countCalls(RedisDirectory.prototype, 'resolveLabel', () => 'RedisDirectory.resolveLabel', true);
  countCalls(RedisDirectory.prototype, 'list', () => 'RedisDirectory.list', true);
  countCalls(RedisDirectory.prototype, 'resolveNode', () => 'RedisDirectory.resolveNode', true);
  countCalls(messages as unknown as Record<string, unknown>, 'encode', (a) => `control message sent: ${KINDS[(a[0] as { kind: number }).kind]}`);
  countCalls(messages as unknown as Record<string, unknown>, 'decode', () => 'control message decoded');
  const g = globalThis as unknown as Record<string, unknown>;
  countCalls(g, 'setTimeout' as never, (a) => `setTimeout (${String(a[1])} ms)`);
  for (const name of ['clearTimeout', 'setImmediate', 'queueMicrotask']) countCalls(g, name as never, () => name);
}

interface Window {
  replyTo: number;
  steps: number;
  faults: number;
  cpu: NodeJS.CpuUsage;
  mainMs: number;
  started: bigint;
  index: number;
}

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking step',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

/** Main-thread GC pauses by kind, counted and timed (cheap: kept in the profile-only mode too). */
function observeGc(): void {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[(e as unknown as { detail: { kind: number } }).detail.kind] ?? 'other';
      count(`GC ${kind}`);
      count(`GC ${kind} ms (total)`, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
}

export function installProbe(dir: string): void {
  const role = process.argv[2] === 'sender' ? 'producer' : 'consumer';
  // RVMA_BENCH_PROBE_COUNTS=0: the profile only (perf runs), without the counting wrappers' cost.
  if (process.env.RVMA_BENCH_PROBE_COUNTS !== '0') wrapLibrary();
  observeGc();
  fs.mkdirSync(dir, { recursive: true });
  const profiler = new inspector.Session();
  profiler.connect();
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((resolve, reject) => profiler.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))));
  // V8's default interval for --cpu-prof (1 ms): shorter ones slowed the same-CPU ping-pong several times over.
  const interval = Number(process.env.RVMA_BENCH_PROBE_INTERVAL_US ?? 1000);
  void post('Profiler.enable').then(() => post('Profiler.setSamplingInterval', { interval }));
  let window: Window | undefined;
  let measurements = 0;
  // The window opens at the producer's run / the consumer's prepare and closes with the reply to
  // that run / to the consumer's finish.
  process.on('message', (req: { id: number; cmd: string; scenario?: { warmup: number; count: number } }) => {
    if (req.cmd === 'prepare' || req.cmd === 'run') {
      const steps = req.scenario!.warmup + req.scenario!.count;
      counts.clear();
      void post('Profiler.start');
      window = { replyTo: req.cmd === 'run' ? req.id : -1, steps, faults: minorFaults(), cpu: process.cpuUsage(), mainMs: mainThreadCpuMs(), started: process.hrtime.bigint(), index: measurements++ };
    } else if (req.cmd === 'finish' && window) {
      window.replyTo = req.id;
    }
  });
  const send = process.send!.bind(process);
  process.send = ((message: { id?: number }, ...rest: never[]) => {
    const w = window;
    if (w && message && message.id === w.replyTo) {
      window = undefined;
      const wallUs = Number(process.hrtime.bigint() - w.started) / 1000;
      const cpu = process.cpuUsage(w.cpu);
      const perStep = Object.fromEntries([...counts].sort().map(([k, v]) => [k, v / w.steps]));
      const record = { role, steps: w.steps, wallUsPerStep: wallUs / w.steps, cpuUsPerStep: (cpu.user + cpu.system) / w.steps, mainThreadCpuUsPerStep: ((mainThreadCpuMs() - w.mainMs) * 1000) / w.steps, faultsPerStep: (minorFaults() - w.faults) / w.steps, perStep };
      const base = path.join(dir, `${role}-${w.index}`);
      fs.writeFileSync(`${base}.json`, `${JSON.stringify(record, null, 2)}\n`);
      void post('Profiler.stop').then((r) => fs.writeFileSync(`${base}.cpuprofile`, JSON.stringify((r as { profile: unknown }).profile)));
    }
    return (send as (...a: unknown[]) => boolean)(message, ...rest);
  }) as typeof process.send;
}
