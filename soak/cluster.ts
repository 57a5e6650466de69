// The processes of a soak and everything the harness knows about them: starts each role on a
// fixed loopback port, restarts it (a new incarnation) after a kill or a crash, hands out the
// directory records and rendezvous sessions, and turns what the roles report into the ledger,
// failure tallies and findings.
import * as path from 'node:path';
import { Attacker } from './attacker';
import { type Finding, PutLedger } from './ledger';
import { HangWatch, Samples, readProc } from './monitor';
import { type SoakOptions, TIMING } from './options';
import { type Plan, planFor } from './plan';
import { type FromRole, type RoleConfig, type SenderTarget, type Tally, type ToRole } from './protocol';
import { TcpProxy } from '../support/tcp-proxy';
import { RedisProcess, freePort } from '../support/private-redis';
import { ChildHandle } from './supervisor';
import type { Victim } from './hostile';
import { Role } from './role';

const ROLES_DIR = path.join(__dirname, 'roles');
const RING_GROUP = 'soak';

interface Pair {
  pair: number;
  producer: Role;
  consumer: Role;
  session: number;
  wantNext: boolean;
  lastSessionAt: number;
  sessions: number;
}

export class Cluster {
  readonly plan: Plan;
  readonly roles: Role[] = [];
  readonly ledger: PutLedger;
  readonly samples = new Samples();
  readonly hang: HangWatch;
  readonly findings: Finding[] = [];
  /** code -> area -> count. */
  readonly failures = new Map<string, Map<string, number>>();
  /** What happened to processes besides injected faults: restarts by reason, crashes. */
  readonly events = new Map<string, number>();
  readonly proxies = new Map<string, TcpProxy>();
  /** role -> the hostile attacks it was the victim of ("kind at N s"). */
  readonly attacked = new Map<string, string[]>();
  /** role -> when (epoch ms) a hostile attack on it last ended or began. */
  readonly lastAttacked = new Map<string, number>();
  redis!: RedisProcess;
  attacker: Attacker | undefined;
  workloadStart = 0;
  private readonly pairs: Pair[] = [];
  private readonly findingKeys = new Set<string>();
  private ticker: NodeJS.Timeout | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private stopping = false;
  private gcId = 0;
  private readonly heapWaits = new Map<number, (bytes: number) => void>();

  constructor(
    readonly options: SoakOptions,
    readonly startedAt: number,
    readonly deadline: number,
    private readonly log: (line: string) => void,
  ) {
    this.plan = planFor(options.processes);
    for (const ring of this.plan.rings) for (const m of ring.members) m.transport = options.ringTransport;
    this.ledger = new PutLedger(startedAt);
    this.hang = new HangWatch(options.hangSeconds * 1000);
  }

  /** Seconds since the workload started (0 before). */
  now(): number {
    return this.workloadStart ? (Date.now() - this.workloadStart) / 1000 : 0;
  }

  role(name: string): Role {
    return this.roles.find((r) => r.name === name)!;
  }

  finding(check: string, detail: string): void {
    const key = `${check}\n${detail}`;
    if (this.findingKeys.has(key)) return;
    this.findingKeys.add(key);
    this.findings.push({ check, detail, at: Math.round(this.now()) });
    this.log(`finding [${check}] ${detail}`);
  }

  countFailure(code: string, area: string, n = 1): void {
    let areas = this.failures.get(code);
    if (!areas) this.failures.set(code, (areas = new Map()));
    areas.set(area, (areas.get(area) ?? 0) + n);
  }

  countEvent(what: string): void {
    this.events.set(what, (this.events.get(what) ?? 0) + 1);
  }

  // ---- start

  async start(): Promise<void> {
    this.redis = await RedisProcess.start();
    for (const p of this.plan.roles) this.roles.push(new Role(p, await freePort()));
    for (const r of this.roles) {
      const fronted = r.name === 'sink-tcp' || ((r.plan.kind === 'producer' || r.plan.kind === 'consumer') && r.plan.transport === 'tcp');
      if (fronted) this.proxies.set(r.name, await TcpProxy.start(`tcp://127.0.0.1:${r.port}`, { name: r.name }));
    }
    for (const pair of this.plan.pairs) {
      this.pairs.push({ pair: pair.pair, producer: this.role(pair.producer.role), consumer: this.role(pair.consumer.role), session: 1, wantNext: false, lastSessionAt: 0, sessions: 1 });
    }
    this.attacker = await Attacker.start(this.deadline + 10_000, TIMING.startTimeoutMs, (message) =>
      this.finding('crash', `the hostile process failed: ${message.split('\n')[0]}`),
    );
    // A few at a time: node processes starting together on two CPUs are slow.
    const queue = [...this.roles];
    const starters = Array.from({ length: 3 }, async () => {
      for (let r = queue.shift(); r; r = queue.shift()) for (let attempt = 0; attempt < 3 && !(await this.spawn(r)); attempt++);
    });
    await Promise.all(starters);
    this.reseed();
    for (const p of this.pairs) this.sendSession(p);
    this.workloadStart = Date.now();
    for (const r of this.roles) this.hang.started(r.name, Date.now());
    this.ticker = setInterval(() => this.tick(), 500);
    this.sampler = setInterval(() => this.sample(), TIMING.sampleMs);
    this.sample();
  }

  private config(r: Role): RoleConfig {
    const p = r.plan;
    const base: RoleConfig = {
      role: p.role,
      kind: p.kind,
      index: p.index,
      incarnation: r.incarnation,
      nodeId: p.kind === 'ring' ? `${p.role}.i${r.incarnation}` : p.role,
      progress: p.progress,
      transport: p.transport,
      port: r.port,
      seed: this.options.seed,
      // After the harness's own: it always acts first.
      deadline: this.deadline + 10_000,
    };
    if (p.kind === 'sender') {
      const targets: SenderTarget[] = this.plan.sinks.map((sink) => {
        const sinkRole = this.role(sink.role);
        if (sink.transport === 'shm') return { sink: sink.index, sinkRole: sink.role, transport: 'shm', target: sink.role, proxied: false };
        // Every other sender goes through the proxy, whose resets break its connections.
        const proxied = (p.index - 100) % 2 === 0;
        const target = proxied ? this.proxies.get(sink.role)!.address : `tcp://127.0.0.1:${sinkRole.port}`;
        return { sink: sink.index, sinkRole: sink.role, transport: 'tcp', target, proxied };
      });
      base.sender = { ratePerTarget: this.options.rate, window: 16, putTimeoutMs: TIMING.putTimeoutMs, targets };
    }
    if (p.kind === 'producer' || p.kind === 'consumer') {
      base.rendezvous = {
        pair: p.pair!,
        producerTask: `/job:producer/replica:0/task:${p.pair}`,
        consumerTask: `/job:consumer/replica:0/task:${p.pair}`,
        tensors: 4,
        stepsPerSecond: 20,
        recvTimeoutMs: TIMING.recvTimeoutMs,
      };
    }
    if (p.kind === 'ring') {
      const ring = this.plan.rings.find((g) => g.group === p.group)!;
      base.ring = {
        group: `${RING_GROUP}-${p.group}`,
        size: ring.members.length,
        redisUrl: this.redis.url,
        cluster: `soak-${process.pid}`,
        framesPerSecond: 100,
        window: 8,
        frameBytes: 4096,
      };
    }
    return base;
  }

  /** Starts the role's next incarnation and waits (bounded) until its endpoint is up. */
  private async spawn(r: Role): Promise<boolean> {
    r.incarnation++;
    r.state = 'starting';
    r.expectExit = undefined;
    r.fatal = undefined;
    r.restartReason = undefined;
    const script = path.join(ROLES_DIR, `${r.plan.kind === 'ring' ? 'ring' : r.plan.kind}.js`);
    const ready = r.whenReady();
    const handle = new ChildHandle<FromRole>(`${r.name}#${r.incarnation}`, script, [JSON.stringify(this.config(r))], (m) => this.onMessage(r, handle, m), this.options.nofile);
    r.handle = handle;
    void handle.exited.then((info) => this.onExit(r, handle, info));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), TIMING.startTimeoutMs)));
    const outcome = await Promise.race([ready.then(() => 'ready' as const), handle.exited.then(() => 'exited' as const), late]);
    clearTimeout(timer);
    if (outcome === 'ready') return true;
    this.finding('start', `${r.name}#${r.incarnation} did not come up (${outcome === 'late' ? `no endpoint within ${TIMING.startTimeoutMs / 1000} s` : 'it exited'})${tail(handle.stderr, r.fatal)}`);
    if (outcome === 'late') {
      r.expectExit = 'killed';
      await handle.kill();
    }
    r.state = 'down';
    return false;
  }

  private onMessage(r: Role, handle: ChildHandle<FromRole>, m: FromRole): void {
    if (handle !== r.handle) return; // a message still in flight from an earlier incarnation
    const now = Date.now();
    if (r.plan.kind === 'sink') this.ledger.sinkHeard(r.plan.index, r.incarnation, now);
    switch (m.type) {
      case 'ready':
        r.nodeId = m.nodeId;
        r.incarnationId = m.incarnationId;
        r.record = m.record;
        r.state = 'live';
        if (r.plan.kind === 'sink') this.ledger.sinkStarted(r.plan.index, r.name, r.incarnation, now);
        if (this.workloadStart) this.hang.started(r.name, now);
        r.markReady();
        return;
      case 'beat':
        r.stats = m.stats;
        this.hang.beat(r.name, m.progress, now);
        return;
      case 'reserve':
        this.ledger.reserve(r.plan.index, r.name, r.incarnation, m.sink, m.upTo);
        return;
      case 'outcomes':
        this.ledger.outcomes(r.plan.index, r.name, r.incarnation, m.sink, m.issued, m.ok, m.failed, now);
        for (const [, code] of m.failed) this.countFailure(code, 'put');
        return;
      case 'arrivals':
        this.ledger.arrivals(r.plan.index, m.streams, (index) => this.roles.find((x) => x.plan.index === index)?.name ?? `sender ${index}`);
        return;
      case 'failure':
        // Once the harness stops the roles, a neighbour leaving is no failure worth counting.
        if (!this.stopping) this.countFailure(m.code, m.area, m.count);
        return;
      case 'violation':
        this.finding(m.check, m.detail);
        return;
      case 'stuck': {
        const pair = this.pairs.find((p) => p.producer === r || p.consumer === r);
        if (pair && m.session === pair.session) pair.wantNext = true;
        return;
      }
      case 'restartMe':
        r.expectExit = 'restarted';
        r.restartReason = m.reason;
        return;
      case 'stopped':
        r.stats = m.stats;
        r.markStopped();
        return;
      case 'heap':
        this.heapWaits.get(m.id)?.(m.heapUsed + m.external);
        return;
      case 'fatal':
        r.fatal = m.message;
        return;
    }
  }

  /** The role's JavaScript heap plus external memory right after a full collection, bytes (undefined: no answer within 5 s). */
  heapAfterGc(r: Role): Promise<number | undefined> {
    const id = ++this.gcId;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.heapWaits.delete(id);
        resolve(undefined);
      }, 5000);
      this.heapWaits.set(id, (bytes) => {
        clearTimeout(timer);
        this.heapWaits.delete(id);
        resolve(bytes);
      });
      r.handle?.send({ type: 'gc', id } satisfies ToRole);
    });
  }

  private onExit(r: Role, handle: ChildHandle<FromRole>, info: { code: number | null; signal: NodeJS.Signals | null }): void {
    if (handle !== r.handle) return;
    if (r.state === 'starting') {
      // It died before its endpoint was up: spawn() reports it and tries again.
      r.state = 'down';
      r.markStopped();
      return;
    }
    const how = r.expectExit ?? 'crashed';
    r.state = r.expectExit === 'stopping' ? 'done' : 'down';
    r.foldStats();
    this.hang.pause(r.name);
    if (r.plan.kind === 'sink') this.ledger.sinkEnded(r.plan.index, r.incarnation, how === 'stopping' ? 'stopped' : how, Date.now());
    if (r.plan.kind === 'sender') this.ledger.senderEnded(r.plan.index, r.incarnation, how === 'stopping' ? 'stopped' : how);
    r.markStopped();
    if (how === 'stopping' || how === 'killed' || this.stopping) return;
    if (how === 'restarted') {
      this.countEvent(`restart: ${r.restartReason ?? 'asked'}`);
    } else {
      this.countEvent('crash');
      this.finding('crash', `${r.name}#${r.incarnation} exited by itself (code ${info.code}, signal ${info.signal})${tail(handle.stderr, r.fatal)}`);
    }
    setTimeout(() => void this.restart(r), 300);
  }

  /** Starts a new incarnation of a role that is down, and tells the others about it. */
  async restart(r: Role): Promise<boolean> {
    if (this.stopping || r.state !== 'down') return false;
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await this.spawn(r)) {
        this.afterRestart(r);
        return true;
      }
      if (this.stopping) return false;
    }
    return false;
  }

  private afterRestart(r: Role): void {
    if (r.usesMemoryDirectory()) this.reseed();
    for (const p of this.pairs) if (p.producer === r || p.consumer === r) p.wantNext = true;
  }

  /** Every memory-directory role gets every other one's record (rendezvous peers through their proxies). */
  private reseed(): void {
    // Stopped ones too: their messages wait in the channel until they run again.
    const memoryRoles = this.roles.filter((r) => r.usesMemoryDirectory() && r.record && (r.state === 'live' || r.state === 'paused'));
    for (const to of memoryRoles) {
      const pair = this.pairs.find((p) => p.producer === to || p.consumer === to);
      const records = memoryRoles
        .filter((r) => r !== to)
        .map((r) => {
          const proxy = this.proxies.get(r.name);
          const partner = pair && (r === pair.producer || r === pair.consumer);
          if (!partner || !proxy) return r.record!;
          return { ...r.record!, addresses: { ...r.record!.addresses, tcp: proxy.address } };
        });
      to.handle?.send({ type: 'peers', records } satisfies ToRole);
    }
  }

  private sendSession(p: Pair): void {
    p.lastSessionAt = Date.now();
    p.wantNext = false;
    for (const r of [p.producer, p.consumer]) r.handle?.send({ type: 'session', id: p.session } satisfies ToRole);
  }

  /** Every 500 ms: new rendezvous sessions where asked for (both sides up), and hang checks. */
  private tick(): void {
    if (this.stopping) return;
    const now = Date.now();
    for (const p of this.pairs) {
      if (!p.wantNext || now - p.lastSessionAt < 1000) continue;
      if (p.producer.state !== 'live' || p.consumer.state !== 'live') continue;
      p.session++;
      p.sessions++;
      this.sendSession(p);
    }
    for (const h of this.hang.check(now)) {
      const r = this.role(h.role);
      this.finding(
        'hang',
        `${r.name}#${r.incarnation} ${h.silent ? 'sent no heartbeat' : 'made no progress'} for ${(h.ms / 1000).toFixed(0)} s (state ${r.state}; stats ${brief(r.stats)})`,
      );
    }
  }

  /** Every couple of seconds: RSS and descriptors of every process; a process over its bound is a finding (and restarted). */
  private sample(): void {
    const t = this.now();
    const all: [string, number | undefined][] = [
      ...this.roles.map((r): [string, number | undefined] => [r.name, r.pid]),
      ['redis', this.redis?.pid],
      ['hostile', this.attacker?.pid],
      ['harness', process.pid],
    ];
    for (const [name, pid] of all) {
      if (pid === undefined) continue;
      const reading = readProc(pid);
      if (!reading) continue;
      this.samples.add(name, { t, rssKiB: reading.rssKiB, fds: reading.fds });
      const r = this.roles.find((x) => x.name === name);
      if (r && !this.stopping && r.state === 'live' && reading.rssKiB > this.options.rssLimitMiB * 1024) {
        this.finding('memory-bound', `${r.name}#${r.incarnation} reached ${(reading.rssKiB / 1024).toFixed(0)} MiB RSS, over the ${this.options.rssLimitMiB} MiB bound: killed and restarted`);
        this.countEvent('restart: over the memory bound');
        void this.kill9(r).then(() => this.restart(r));
      }
    }
  }

  // ---- what the fault injector does to processes

  /** SIGKILLs the role's process (the injector restarts it). */
  async kill9(r: Role): Promise<void> {
    if (!r.handle?.running) return;
    r.expectExit = 'killed';
    this.hang.pause(r.name);
    await r.handle.kill();
    r.state = 'down';
  }

  /** SIGSTOP for ms, then SIGCONT. */
  async pause(r: Role, ms: number): Promise<void> {
    if (!r.handle?.running) return;
    this.hang.pause(r.name);
    r.state = 'paused';
    r.handle.signal('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, ms));
    r.handle.signal('SIGCONT');
    if (r.state === 'paused') r.state = 'live';
    this.hang.resume(r.name, Date.now());
  }

  liveRoles(): Role[] {
    return this.roles.filter((r) => r.state === 'live');
  }

  victimOf(r: Role, fdLimit?: number): Victim {
    const task = r.plan.kind === 'producer' || r.plan.kind === 'consumer' ? this.config(r).rendezvous![r.plan.kind === 'producer' ? 'producerTask' : 'consumerTask'] : undefined;
    return { role: r.name, address: `tcp://127.0.0.1:${r.port}`, nodeId: r.nodeId, incarnationId: r.incarnationId, task, fdLimit };
  }

  // ---- the end

  /** Stops every role (workloads first, sinks last: they report what arrived), bounded; then the rest. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    clearInterval(this.ticker);
    const stopGroup = async (group: Role[]): Promise<void> => {
      await Promise.all(
        group.map(async (r) => {
          const handle = r.handle;
          if (!handle?.running) return;
          // A role still being restarted is just killed.
          r.expectExit = 'stopping';
          handle.signal('SIGCONT');
          const stopped = r.whenStopped();
          handle.send({ type: 'stop' } satisfies ToRole);
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), TIMING.stopTimeoutMs)));
          const outcome = await Promise.race([stopped.then(() => 'stopped' as const), late]);
          clearTimeout(timer);
          if (outcome === 'late') this.finding('hang', `${r.name}#${r.incarnation} did not stop within ${TIMING.stopTimeoutMs / 1000} s of being asked (stats ${brief(r.stats)})`);
          if (!(await handle.waitExit(5000))) await handle.kill();
        }),
      );
    };
    await stopGroup(this.roles.filter((r) => r.plan.kind !== 'sink'));
    await stopGroup(this.roles.filter((r) => r.plan.kind === 'sink'));
    for (const r of this.roles) r.foldStats();
    clearInterval(this.sampler);
    await this.attacker?.kill();
    await Promise.all([...this.proxies.values()].map((p) => p.close()));
    await this.redis?.stop();
  }

  /** Everything, now, without waiting (Ctrl-C, an exception, the hard deadline). */
  async abort(): Promise<void> {
    this.stopping = true;
    clearInterval(this.ticker);
    clearInterval(this.sampler);
    await Promise.all([...this.roles.map((r) => r.handle?.kill()), this.attacker?.kill()]);
    for (const r of this.roles) r.foldStats();
    await Promise.all([...this.proxies.values()].map((p) => p.close().catch(() => undefined)));
    await this.redis?.stop().catch(() => undefined);
  }

  sessionsStarted(): number {
    return this.pairs.reduce((n, p) => n + p.sessions, 0);
  }
}

function tail(stderr: string, fatal: string | undefined): string {
  const text = (fatal ?? stderr).trim();
  if (!text) return '';
  const lines = text.split('\n').filter(Boolean);
  return `: ${lines.slice(0, 3).join(' | ').slice(0, 400)}`;
}

function brief(stats: Tally): string {
  return (
    Object.entries(stats)
      .filter(([k]) => !k.startsWith('rdv.') && !k.startsWith('failed.'))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ') || 'none'
  );
}
