// The fault injector: from the seed, a schedule of faults, one at a time with a few seconds
// between them, each kind in turn in a shuffled order (so a two-minute run sees every kind):
// kill -9 and restart, SIGSTOP longer and shorter than the peer timeout, tcp resets through the
// proxies, a Redis restart, and hostile clients. For hostile clients it also measures what the
// attack did to its victim (memory, descriptors, CPU, whether it still greets new connections).
import type { AttackRecord } from './attacker';
import type { Cluster } from './cluster';
import type { Role } from './role';
import type { AttackKind } from './hostile';
import { probe } from './hostile';
import { CLOCK_TICKS, type ProcReading, fdLimit, readProc } from './monitor';
import { TIMING } from './options';
import { type Random, between, pick, rng, shuffle } from './rng';

export const FAULT_KINDS = [
  'kill9-restart',
  'stop-long',
  'stop-short',
  'tcp-reset',
  'redis-restart',
  'slowloris',
  'never-reading',
  'connection-flood',
  'tensor-request-flood',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultLog {
  /** Seconds since the workload started. */
  at: number;
  kind: FaultKind;
  target: string;
  detail: string;
}

/** What a hostile attack did to its victim. */
export interface HostileImpact {
  kind: AttackKind;
  victim: string;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  rssAfterMiB: number;
  fdsBefore: number;
  fdsPeak: number;
  fdsAfter: number;
  /** The victim's CPU time over the attack, as a share of one CPU. */
  cpuShare: number;
  /** The victim's JavaScript heap plus external memory after a full collection, before and after; -1 unknown. */
  heapBeforeMiB: number;
  heapAfterMiB: number;
  /** ms until a new connection got the victim's hello after the attack; -1 none within 3 s, -2 refused. */
  probeAfterMs: number;
  attacker: Record<string, number | string>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (kib: number): number => Math.round(kib / 1024);

export class FaultInjector {
  readonly counts = new Map<FaultKind, number>();
  readonly log: FaultLog[] = [];
  readonly impacts: HostileImpact[] = [];
  private readonly random: Random;
  private stopped = false;
  /** Per process fault: the workloads its next victims come from, in turn (every workload gets hit). */
  private readonly victimTurns = new Map<FaultKind, string[]>();

  constructor(
    private readonly cluster: Cluster,
    seed: number,
    private readonly kinds: readonly FaultKind[],
    private readonly say: (line: string) => void,
  ) {
    this.random = rng(seed ^ 0x5eed_fa17);
  }

  /** Injects faults until `until` (epoch ms) or stop(); resolves when the fault under way is over. */
  async run(until: number): Promise<void> {
    let order: FaultKind[] = [];
    while (!this.stopped) {
      await sleep(between(this.random, TIMING.faultGapMs[0], TIMING.faultGapMs[1]));
      if (this.stopped || Date.now() >= until) return;
      if (!order.length) order = shuffle(this.random, this.kinds);
      const kind = order.shift()!;
      try {
        await this.inject(kind);
      } catch (error) {
        this.cluster.finding('harness', `fault ${kind} could not be injected: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private record(kind: FaultKind, target: string, detail: string): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    const entry = { at: Math.round(this.cluster.now()), kind, target, detail };
    this.log.push(entry);
    this.say(`fault ${kind} -> ${target}${detail ? ` (${detail})` : ''}`);
  }

  private victim(filter: (r: Role) => boolean = () => true): Role | undefined {
    const live = this.cluster.liveRoles().filter(filter);
    return live.length ? pick(this.random, live) : undefined;
  }

  /** A victim for a process fault, from each workload in turn: sinks, senders, the rendezvous, the ring. */
  private processVictim(kind: FaultKind): Role | undefined {
    let turns = this.victimTurns.get(kind);
    if (!turns?.length) this.victimTurns.set(kind, (turns = shuffle(this.random, ['sink', 'sender', 'rendezvous', 'ring'])));
    const workload = turns.shift()!;
    const of = (r: Role): boolean => (workload === 'rendezvous' ? r.plan.kind === 'producer' || r.plan.kind === 'consumer' : r.plan.kind === workload);
    return this.victim(of) ?? this.victim();
  }

  private async inject(kind: FaultKind): Promise<void> {
    switch (kind) {
      case 'kill9-restart': {
        const r = this.processVictim(kind);
        if (!r) return;
        const pid = r.pid;
        await this.cluster.kill9(r);
        this.record(kind, r.name, `pid ${pid}, incarnation ${r.incarnation}`);
        await sleep(500);
        await this.cluster.restart(r);
        return;
      }
      case 'stop-long':
      case 'stop-short': {
        const r = this.processVictim(kind);
        if (!r) return;
        const ms = kind === 'stop-long' ? TIMING.stopLongMs : TIMING.stopShortMs;
        this.record(kind, r.name, `SIGSTOP for ${ms} ms (peer timeout ${TIMING.peerTimeoutMs} ms)`);
        await this.cluster.pause(r, ms);
        return;
      }
      case 'tcp-reset': {
        const proxies = [...this.cluster.proxies.values()];
        const busy = proxies.filter((p) => p.live > 0);
        const proxy = pick(this.random, busy.length ? busy : proxies);
        const n = proxy.resetAll();
        this.record(kind, `proxy of ${proxy.name}`, `${n} connection(s) reset`);
        return;
      }
      case 'redis-restart': {
        const down = Math.round(between(this.random, 300, 1500));
        this.record(kind, 'redis', `down for ${down} ms`);
        await this.cluster.redis.restart(down);
        return;
      }
      default:
        return this.hostile(kind);
    }
  }

  private async hostile(kind: AttackKind): Promise<void> {
    const r = this.victim((x) => x.plan.kind === 'producer' || x.plan.kind === 'consumer' || kind !== 'tensor-request-flood');
    if (!r || r.pid === undefined) return;
    const pid = r.pid;
    const victim = this.cluster.victimOf(r, fdLimit(pid));
    this.record(kind, r.name, kind === 'connection-flood' ? `victim's open-files limit ${victim.fdLimit}` : '');
    const attacked = this.cluster.attacked.get(r.name) ?? [];
    attacked.push(`${kind} at ${Math.round(this.cluster.now())} s`);
    this.cluster.attacked.set(r.name, attacked);
    this.cluster.lastAttacked.set(r.name, Date.now());
    const heapBefore = await this.cluster.heapAfterGc(r);
    const before = readProc(pid);
    let peak: ProcReading | undefined = before;
    const watch = setInterval(() => {
      const now = readProc(pid);
      if (!now) return;
      peak = { rssKiB: Math.max(peak?.rssKiB ?? 0, now.rssKiB), fds: Math.max(peak?.fds ?? 0, now.fds), cpuTicks: now.cpuTicks };
    }, 500);
    const began = Date.now();
    const attack: AttackRecord = await this.cluster.attacker!.attack(kind, victim, TIMING.hostileMs[kind]);
    this.cluster.lastAttacked.set(r.name, Date.now());
    const cpuEnd = readProc(pid)?.cpuTicks;
    const seconds = (Date.now() - began) / 1000;
    // Let the victim close what the attack left, then look again.
    await sleep(3000);
    const probeAfterMs = await probe(victim.address);
    await sleep(1000);
    clearInterval(watch);
    const after = readProc(pid);
    const heapAfter = r.pid === pid ? await this.cluster.heapAfterGc(r) : undefined;
    if (!before || !after || r.pid !== pid) return; // the victim was restarted meanwhile: nothing to measure
    const impact: HostileImpact = {
      kind,
      victim: r.name,
      rssBeforeMiB: mib(before.rssKiB),
      rssPeakMiB: mib(Math.max(peak?.rssKiB ?? 0, after.rssKiB)),
      rssAfterMiB: mib(after.rssKiB),
      fdsBefore: before.fds,
      fdsPeak: Math.max(peak?.fds ?? 0, after.fds),
      fdsAfter: after.fds,
      cpuShare: cpuEnd === undefined ? 0 : (cpuEnd - before.cpuTicks) / CLOCK_TICKS / seconds,
      heapBeforeMiB: heapBefore === undefined ? -1 : Math.round(heapBefore / 2 ** 20),
      heapAfterMiB: heapAfter === undefined ? -1 : Math.round(heapAfter / 2 ** 20),
      probeAfterMs,
      attacker: attack.result ?? { error: attack.error ?? 'no result' },
    };
    this.impacts.push(impact);
    this.judge(impact, attack);
  }

  /** Findings from one attack: what a hardened endpoint should not let a client do to it. */
  private judge(i: HostileImpact, attack: AttackRecord): void {
    const who = `${i.kind} against ${i.victim}`;
    const a = i.attacker;
    if (attack.error) this.cluster.finding('harness', `${who}: the attack failed: ${attack.error}`);
    if (i.rssPeakMiB - i.rssBeforeMiB > TIMING.hostileRssMiB || i.rssAfterMiB - i.rssBeforeMiB > TIMING.hostileRetainedMiB) {
      this.cluster.finding(
        'hostile-memory',
        `${who}: the victim's RSS went from ${i.rssBeforeMiB} to ${i.rssPeakMiB} MiB, and was ${i.rssAfterMiB} MiB 4 s after the attack ended ` +
          `(heap and external memory after a full collection: ${i.heapBeforeMiB} -> ${i.heapAfterMiB} MiB; attacker: ${fmt(a)})`,
      );
    }
    if (i.heapBeforeMiB >= 0 && i.heapAfterMiB - i.heapBeforeMiB > TIMING.hostileHeapMiB) {
      this.cluster.finding(
        'hostile-memory',
        `${who}: after a full garbage collection the victim still held ${i.heapAfterMiB - i.heapBeforeMiB} MiB more JavaScript heap and external memory than before ` +
          `(${i.heapBeforeMiB} -> ${i.heapAfterMiB} MiB): the attack left objects behind (attacker: ${fmt(a)})`,
      );
    }
    // Work the victim must do (answering requests) is no spin; an attack that holds connections is.
    if (i.kind !== 'tensor-request-flood' && i.cpuShare > TIMING.hostileCpuShare) {
      this.cluster.finding('hostile-cpu', `${who}: the victim used ${(100 * i.cpuShare).toFixed(0)}% of a CPU while attacked (attacker: ${fmt(a)})`);
    }
    if (i.probeAfterMs < 0) {
      this.cluster.finding('hostile-availability', `${who}: 3 s after the attack a new connection got no hello from the victim (${i.probeAfterMs === -1 ? 'none within 3 s' : 'refused or closed'})`);
    }
    const during = typeof a.probeMs === 'number' ? a.probeMs : undefined;
    if (during !== undefined && during < 0 && (i.kind === 'slowloris' || i.kind === 'never-reading')) {
      this.cluster.finding('hostile-availability', `${who}: during the attack a new connection got no hello from the victim (${during === -1 ? 'none within 3 s' : 'refused or closed'})`);
    }
    if (i.kind === 'slowloris' && typeof a.stillOpenAtEnd === 'number' && a.stillOpenAtEnd > 0) {
      this.cluster.finding(
        'hostile-handshake',
        `${who}: ${a.stillOpenAtEnd} of ${a.opened} unfinished handshakes were still open after ${TIMING.hostileMs.slowloris / 1000} s, connectTimeoutMs being ${TIMING.connectTimeoutMs} ms ` +
          `(hellos still trickling in: ${a.stillOpenTrickling} open, closed after ${a.closedAfterMsTrickling} ms; hellos stalled after 10 bytes: ${a.stillOpenStalled} open, closed after ${a.closedAfterMsStalled} ms)`,
      );
    }
  }
}

function fmt(result: Record<string, number | string>): string {
  return Object.entries(result)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}
