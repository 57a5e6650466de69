// The soak's invariants, checked every minute and at the end: every put exactly once or failed
// typed (the ledger), epochs exact and ring frames in order (reported by the roles as they check
// them), no process over its memory bound (the sampler), no memory growth after warm-up, no
// descriptor growth, no hang (the heartbeat watch), and every workload doing work at all.
import { type Cluster } from './cluster';
import type { PutCounts } from './ledger';
import { TIMING } from './options';

const MIB = 1024;

/** Minute checks: the findings that can already be made, and a status line. */
export function minuteCheck(cluster: Cluster): string {
  const { counts, findings } = cluster.ledger.evaluate(false, Date.now());
  for (const f of findings) cluster.finding(f.check, f.detail);
  // Gross descriptor growth, away from hostile clients (a connection flood holds hundreds while it lasts).
  const warmup = TIMING.warmupMs(cluster.options.minutes) / 1000;
  for (const r of cluster.roles) {
    const list = cluster.samples.byRole.get(r.name);
    const latest = list?.[list.length - 1];
    const baseline = cluster.samples.range(r.name, 'fds', 0, warmup);
    const attackedAt = cluster.lastAttacked.get(r.name) ?? 0;
    if (!latest || !baseline.n || Date.now() - attackedAt < 30_000) continue;
    if (latest.fds > baseline.max + TIMING.fdGrossSlack) {
      cluster.finding('fd-growth', `${r.name}: ${latest.fds} open descriptors at ${Math.round(latest.t)} s, against at most ${baseline.max} in the warm-up${victimOf(cluster, r.name)}`);
    }
  }
  const sum = (kind: string, key: string): number =>
    cluster.roles.filter((r) => r.plan.kind === kind).reduce((n, r) => n + (r.totals[key] ?? 0) + (r.stats[key] ?? 0), 0);
  return (
    `puts ${counts.placed} placed / ${counts.refused} refused, ${counts.arrived} arrived; ` +
    `rendezvous ${sum('consumer', 'steps')} steps; ring ${sum('ring', 'framesChecked')} frames; findings ${cluster.findings.length}`
  );
}

export interface MemoryRow {
  role: string;
  minMiB: number;
  maxMiB: number;
  firstMinuteMaxMiB: number;
  secondHalfMaxMiB: number;
  grew: boolean | undefined;
}

export interface FdRow {
  role: string;
  min: number;
  max: number;
  baseline: number;
  quiet: number | undefined;
  grew: boolean | undefined;
}

export interface FinalChecks {
  puts: PutCounts;
  memory: MemoryRow[];
  fds: FdRow[];
  /** Why growth was not judged, if it was not. */
  growthNote: string | undefined;
}

/** Roles checked for growth: the endpoint processes (the hostile one grows by design). */
function checkedRoles(cluster: Cluster): string[] {
  return cluster.roles.map((r) => r.name);
}

/**
 * The end-of-run checks. quietFds: each role's descriptor count after the faults stopped and
 * the roles settled, before they were asked to stop. complete: every role stopped and reported.
 */
export function finalCheck(cluster: Cluster, seconds: number, quietFds: Map<string, number>, complete = true): FinalChecks {
  // An interrupted run has not heard every final report: only what cannot change is judged.
  const { counts, findings } = cluster.ledger.evaluate(complete, Date.now());
  for (const f of findings) cluster.finding(f.check, f.detail);

  const longEnough = seconds >= 120;
  const growthNote = longEnough ? undefined : `memory growth is judged on runs of 2 minutes or more (this one: ${(seconds / 60).toFixed(1)})`;
  const memory: MemoryRow[] = [];
  const fds: FdRow[] = [];
  const names = [...checkedRoles(cluster), 'hostile', 'redis', 'harness'];
  const warmup = TIMING.warmupMs(cluster.options.minutes) / 1000;
  for (const role of names) {
    const all = cluster.samples.range(role, 'rssKiB');
    if (!all.n) continue;
    const first = cluster.samples.range(role, 'rssKiB', 0, 60);
    const second = cluster.samples.range(role, 'rssKiB', seconds / 2, Infinity);
    const endpoint = cluster.roles.some((r) => r.name === role);
    let grew: boolean | undefined;
    if (longEnough && endpoint && first.n && second.n) {
      grew = second.max > Math.max(first.max * TIMING.growthFactor, first.max + TIMING.growthMinMiB * MIB);
      if (grew) {
        cluster.finding(
          'memory-growth',
          `${role}: RSS at most ${(second.max / MIB).toFixed(0)} MiB in the second half, against ${(first.max / MIB).toFixed(0)} MiB in the first minute ` +
            `(more than ×${TIMING.growthFactor} and +${TIMING.growthMinMiB} MiB)${victimOf(cluster, role)}`,
        );
      }
    }
    memory.push({ role, minMiB: all.min / MIB, maxMiB: all.max / MIB, firstMinuteMaxMiB: first.n ? first.max / MIB : NaN, secondHalfMaxMiB: second.n ? second.max / MIB : NaN, grew });

    const f = cluster.samples.range(role, 'fds');
    // Baseline: the warm-up, before any fault or hostile client (the first minute if it has no samples).
    const warm = cluster.samples.range(role, 'fds', 0, warmup);
    const baseline = warm.n ? warm.max : cluster.samples.range(role, 'fds', 0, 60).max;
    const quiet = quietFds.get(role);
    let fdGrew: boolean | undefined;
    if (endpoint && quiet !== undefined && Number.isFinite(baseline)) {
      fdGrew = quiet > baseline + TIMING.fdSlack;
      if (fdGrew) {
        cluster.finding('fd-growth', `${role}: ${quiet} open descriptors once the faults were over, against at most ${baseline} in the warm-up (slack ${TIMING.fdSlack})${victimOf(cluster, role)}`);
      }
    }
    fds.push({ role, min: f.min, max: f.max, baseline, quiet, grew: fdGrew });
  }

  // Every workload did work at all (a ring that never formed would otherwise pass quietly).
  const total = (kind: string, key: string): number => cluster.roles.filter((r) => r.plan.kind === kind).reduce((n, r) => n + (r.totals[key] ?? 0), 0);
  const idle: [string, number][] = [
    ['puts placed', counts.placed],
    ['sink records', total('sink', 'records')],
    ['rendezvous steps', total('consumer', 'steps')],
    ['ring frames checked', total('ring', 'framesChecked')],
  ];
  if (complete) for (const [what, n] of idle) if (n === 0) cluster.finding('idle', `no ${what} in the whole run`);
  return { puts: counts, memory, fds, growthNote };
}

function victimOf(cluster: Cluster, role: string): string {
  const attacks = cluster.attacked.get(role);
  return attacks?.length ? `; it was attacked by hostile clients: ${attacks.join(', ')}` : '';
}
