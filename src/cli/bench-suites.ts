// The benchmark suites `rvma bench` runs, and the options each takes (passed on to its run.js).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Endpoint } from '../mailbox';
import { compiled, packageRoot } from './package-root';

export interface SuiteOption {
  /** As commander declares it, e.g. '--reps <n>' or '--quick'. */
  flags: string;
  description: string;
}

/** The ids a suite's --scenarios, --variants and --transports accept, from its compiled config. */
export type SuiteIds = Partial<Record<'scenarios' | 'variants' | 'transports', string[]>>;

export interface Suite {
  name: string;
  description: string;
  options: SuiteOption[];
  /** The compiled script under dist/ that runs it. */
  script(): string;
  /** The ids its id options take (read when the command line is parsed or help is shown). */
  ids(): SuiteIds;
}

/** The exports of a suite's compiled config module (dist/bench/<suite>/config.js). */
function config(suite: string): Record<string, unknown> {
  return require(compiled(`bench/${suite}/config.js`)) as Record<string, unknown>;
}
const idsOf = (items: unknown): string[] => (items as { id: string }[]).map((x) => x.id);

const reps: SuiteOption = { flags: '--reps <n>', description: 'repetitions, interleaved (medians are reported)' };
const scenarios: SuiteOption = { flags: '--scenarios <ids>', description: 'comma-separated scenario ids (default: all)' };
const variants: SuiteOption = { flags: '--variants <ids>', description: 'comma-separated rows to run (default: all)' };
const transports: SuiteOption = { flags: '--transports <ids>', description: 'comma-separated transports (default: all)' };
const quick: SuiteOption = { flags: '--quick', description: 'fewer and shorter measurements (a first look, not for the record)' };
const rate: SuiteOption[] = [
  { flags: '--no-rate', description: 'skip the message-rate part' },
  { flags: '--rate-only', description: 'only the message-rate part' },
];
const placement = (modes: string): SuiteOption => ({ flags: '--placement <mode>', description: `where the processes run: ${modes}` });
/** ucx_perftest's -s, -n, -w and -O (bench/common/knobs.ts). */
const knobs: SuiteOption[] = [
  { flags: '--sizes <list>', description: 'message sizes, e.g. 8,64k,1m: one scenario per size and kind chosen (-s)' },
  { flags: '--iterations <n>', description: 'timed operations per measurement (-n)' },
  { flags: '--warmup <count>', description: 'untimed operations before them (-w)' },
  { flags: '--window <n>', description: 'puts in flight in the bandwidth scenarios (-O)' },
];

/** In a checkout without an RDMA device, the rdma suite runs in the Soft-RoCE guest of scripts/rdma-vm. */
function rdmaScript(): string {
  const guest = path.join(packageRoot(), 'scripts', 'rdma-vm', 'run.sh');
  const active = Endpoint.capabilities.devices.some((d) => d.activePorts > 0);
  return !active && fs.existsSync(guest) ? 'bench/rdma/host.js' : 'bench/rdma/run.js';
}

export const SUITES: Suite[] = [
  {
    name: 'tcp',
    description: 'mailbox puts and raw writes over tcp against net.Socket and C sockets; then the message rate against UCX',
    options: [
      reps,
      placement('same (one CPU, default), split (one each), none'),
      variants,
      scenarios,
      quick,
      ...rate,
      ...knobs,
    ],
    script: () => 'bench/tcp/run.js',
    ids: () => ({ scenarios: idsOf(config('tcp').SCENARIOS), variants: idsOf(config('tcp').VARIANTS) }),
  },
  {
    name: 'shm',
    description: 'puts through shared memory against memcpy, Unix sockets and UCX',
    options: [reps, placement('same (default), split, none'), variants, scenarios, ...knobs],
    script: () => 'bench/shm/run.js',
    ids: () => ({ scenarios: idsOf(config('shm').SCENARIOS), variants: idsOf(config('shm').VARIANTS) }),
  },
  {
    name: 'rdma',
    description: 'puts and raw writes over verbs against perftest, then the message rate (in the Soft-RoCE guest where this host has no RDMA device)',
    options: [reps, variants, scenarios, quick, ...rate, ...knobs],
    script: rdmaScript,
    ids: () => ({ scenarios: idsOf(config('rdma').SCENARIOS), variants: idsOf(config('rdma').VARIANTS) }),
  },
  {
    name: 'rendezvous',
    description: 'the tensor rendezvous between two processes against plain puts of the same bytes',
    options: [reps, placement('comma-separated: same, split (default: both)'), scenarios, transports, quick],
    script: () => 'bench/rendezvous/run.js',
    ids: () => {
      const c = config('rendezvous');
      return { scenarios: idsOf((c.scenarios as (quick: boolean) => unknown)(false)), transports: idsOf(c.TRANSPORTS) };
    },
  },
  {
    name: 'ring',
    description: 'the ring transport (3 ranks) against a net.Socket ring, and the pipeline example',
    options: [
      reps,
      placement('comma-separated: same, none (default: both)'),
      scenarios,
      transports,
      quick,
      { flags: '--iterations <n>', description: 'frames per measurement' },
      { flags: '--no-pipeline', description: 'skip the pipeline example' },
    ],
    script: () => 'bench/ring/run.js',
    ids: () => {
      const c = config('ring');
      return { scenarios: idsOf((c.scenarios as (quick: boolean, n: undefined) => unknown)(false, undefined)), transports: idsOf(c.TRANSPORTS) };
    },
  },
];

/** The command line a suite's run.js reads, from the options commander parsed. */
export function suiteArguments(suite: Suite, parsed: Record<string, unknown>): string[] {
  const args: string[] = [];
  for (const option of suite.options) {
    const long = option.flags.split(' ')[0];
    const negated = long.startsWith('--no-');
    const key = (negated ? long.slice(5) : long.slice(2)).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const value = parsed[key];
    if (negated) {
      if (value === false) args.push(long);
    } else if (value === true) {
      args.push(long);
    } else if (typeof value === 'string' || typeof value === 'number') {
      args.push(long, String(value));
    }
  }
  return args;
}
