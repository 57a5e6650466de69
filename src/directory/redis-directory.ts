// The deployment directory on Redis (ioredis). A node's record is a lease renewed by
// heartbeat: a node killed with -9 disappears within its TTL, and its names with it.
// Watchers get join/update/leave from pub/sub at once, and leases that lapsed from a
// periodic comparison of the member list. A node whose own lease lapsed, or was taken by
// another incarnation, is told with a 'lost' event.
import { debugLog } from '../base/debug-log';
import { EventEmitter } from 'node:events';
import { RvmaError } from '../base/errors';
import { checkInteger, checkOptions, checkString, invalid } from '../base/validate';
import { type Directory, type DirectoryEvent, type NameBinding, type NodeRecord, type RegistrationLostInfo } from './directory';
import { EventStream } from './event-stream';
import {
  type RedisClient,
  type RedisCredentials,
  certificateRefusal,
  clusterTarget,
  directoryError,
  isRefusal,
  maskedUrl,
  nodeErrorOf,
  redisClient,
  sentinelTarget,
} from './redis-connection';
import { BIND, DEREGISTER, HEARTBEAT, REGISTER, UNBIND } from './redis-scripts';

export interface RedisDirectoryOptions extends RedisCredentials {
  /**
   * redis://[USER:PASSWORD@]HOST:PORT[/DB], or rediss://... for TLS. Default: REDIS_URL, else
   * redis://127.0.0.1:6379. Messages and `directory.url` show it with the password masked.
   * Not with `sentinels` or `clusterNodes`.
   */
  url?: string;
  /**
   * A sharded Redis (Cluster): some of its nodes, from which the client learns the rest and
   * which node serves which slot. A namespace's keys share one hash slot (docs/directory.md).
   * `username`, `password` and `tls` apply to every node.
   */
  clusterNodes?: { host: string; port: number }[];
  /**
   * A replicated Redis (Sentinel): the sentinels to ask for the primary monitored under `name`.
   * After a failover the directory follows the promoted primary. `username`, `password` and
   * `tls` are the primary's (and replicas'); `tls` applies to the sentinels too.
   */
  sentinels?: { host: string; port: number }[];
  /** With `sentinels`: the name the sentinels monitor the primary under. */
  name?: string;
  /** With `sentinels`: their ACL user and password, when they require them. */
  sentinelUsername?: string;
  sentinelPassword?: string;
  /** The directory's namespace: nodes of different namespaces never see each other. Default 'default'. */
  namespace?: string;
  /** The former name of `namespace`, still accepted. */
  cluster?: string;
  /** Lease length: a silent node is gone after this long. Default 5000 ms. */
  ttlMs?: number;
  /** Lease renewal period. Default ttlMs / 3. */
  heartbeatMs?: number;
  /** How long the first connection may take before ERR_RVMA_DIRECTORY_UNAVAILABLE. Default 2000 ms. */
  connectTimeoutMs?: number;
  /**
   * How long a call waits for Redis' answer before it fails with ERR_RVMA_DIRECTORY_UNAVAILABLE:
   * a Redis cut off without a word (a pulled cable, a partition) would otherwise keep it waiting
   * for as long as TCP retransmits. Default 5000 ms.
   */
  commandTimeoutMs?: number;
  /** How often watchers compare the member list to spot lapsed leases. Default ttlMs / 2. */
  watchIntervalMs?: number;
}

const KEYS = [
  'url', 'sentinels', 'name', 'sentinelUsername', 'sentinelPassword', 'clusterNodes', 'namespace', 'cluster', 'ttlMs', 'heartbeatMs',
  'connectTimeoutMs', 'commandTimeoutMs', 'watchIntervalMs',
  'username', 'password', 'tls',
] as const;
const WATCH_LIMIT = 10_000;
/** What ioredis rejects a command with after commandTimeout. */
const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * A Directory on Redis. Emits 'lost' (RegistrationLostInfo) when this node's registration
 * ends without deregister(): another incarnation registered the node id, or the lease lapsed
 * because renewal failed for longer than ttlMs.
 */
export class RedisDirectory extends EventEmitter implements Directory {
  /**
   * Connects and returns a ready directory, or rejects with ERR_RVMA_DIRECTORY_UNAVAILABLE (Redis
   * unreachable) or ERR_RVMA_AUTH (Redis refused the credentials, or TLS its certificate).
   */
  static async connect(options?: RedisDirectoryOptions): Promise<RedisDirectory> {
    const call = 'RedisDirectory.connect';
    const o = checkOptions<RedisDirectoryOptions>(call, options, KEYS);
    const sentinel = o.sentinels === undefined && o.name === undefined ? undefined : sentinelTarget(call, o);
    const shards = o.clusterNodes === undefined ? undefined : clusterTarget(call, o.clusterNodes);
    if ([o.url !== undefined, sentinel, shards].filter(Boolean).length > 1) throw invalid(call, 'give one of url, sentinels and clusterNodes');
    const url = o.url === undefined ? (process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') : checkString(call, 'url', o.url);
    const namespace = namespaceOf(call, o);
    // On a cluster the namespace is a hash tag: a brace in it would end the tag early.
    if (shards && /[{}]/.test(namespace)) throw invalid(call, `namespace "${namespace}" must not contain { or } on a cluster`);
    const ttlMs = checkInteger(call, 'ttlMs', o.ttlMs ?? 5000, 100, 86_400_000);
    const heartbeatMs = checkInteger(call, 'heartbeatMs', o.heartbeatMs ?? Math.floor(ttlMs / 3), 10, ttlMs - 1);
    const connectTimeoutMs = checkInteger(call, 'connectTimeoutMs', o.connectTimeoutMs ?? 2000, 1, 600_000);
    const commandTimeoutMs = checkInteger(call, 'commandTimeoutMs', o.commandTimeoutMs ?? 5000, 1, 600_000);
    const watchIntervalMs = checkInteger(call, 'watchIntervalMs', o.watchIntervalMs ?? Math.floor(ttlMs / 2), 10, 600_000);
    const hosts = (list: { host: string; port: number }[]) => list.map((x) => `${x.host}:${x.port}`).join(',');
    const shown = sentinel ? `sentinel:${sentinel.name}@${hosts(sentinel.sentinels)}` : shards ? `cluster:${hosts(shards.clusterNodes)}` : maskedUrl(url);
    // A Redis that restarted, or a promoted primary, is found within a heartbeat (2 s at most):
    // early enough in our lease to register again.
    const redis = redisClient(call, sentinel ?? shards ?? url, o, { connectTimeoutMs, commandTimeoutMs, reconnectCapMs: Math.min(heartbeatMs, 2000) });
    // Surfaced through command failures; the last one explains a connection that never came up.
    let lastError: Error | undefined;
    redis.on('error', (error: Error) => (lastError = error));
    try {
      await withTimeout(redis.connect(), connectTimeoutMs);
      // A server that wants a password we did not send says so at the first command, not at connect.
      await withTimeout(redis.ping(), connectTimeoutMs);
    } catch (cause) {
      redis.disconnect();
      // connect() may fail with a generic error; the client's last 'error' event says why (a
      // cluster's, the last node's error it wraps), or, through sentinels or a cluster, a
      // handshake of our own (a certificate we do not trust).
      const refusal = [cause, lastError].map(nodeErrorOf).find(isRefusal) ?? (await certificateRefusal(call, sentinel ?? shards ?? url, o, connectTimeoutMs));
      if (refusal) throw directoryError(`${call}: Redis at ${shown}`, refusal);
      const detail = lastError && lastError !== cause ? ` (${lastError.message})` : '';
      throw new RvmaError(
        'ERR_RVMA_DIRECTORY_UNAVAILABLE',
        `${call}: cannot reach Redis at ${shown} within ${connectTimeoutMs} ms: ${(cause as Error).message}${detail}`,
        { cause },
      );
    }
    if (debugLog.enabled) debugLog(`directory: connected to Redis at ${shown} (namespace "${namespace}")`);
    // On a cluster the namespace is a hash tag: its keys share one slot, so that every script
    // (which reads and writes several of them at once) runs on one node.
    const prefix = shards ? `rvma:{${namespace}}:` : `rvma:${namespace}:`;
    return new RedisDirectory(redis, shown, prefix, ttlMs, heartbeatMs, watchIntervalMs);
  }

  private self: NodeRecord | undefined;
  private readonly bound = new Map<string, bigint>();
  private heartbeat: NodeJS.Timeout | undefined;
  private renewing = false;
  /**
   * When (performance.now()) the last renewal that Redis accepted was sent: Redis extended the
   * lease after that, so it holds at least until leaseFrom + ttlMs. A node key found missing
   * before then vanished with Redis's data (a restart), not by expiry.
   */
  private leaseFrom = 0;
  /**
   * When the first renewal that got no answer since the last answered one was sent: Redis has
   * been unreachable from then on. An outage that began within our lease and lasted less than
   * ttlMs explains a node key found gone afterwards (Redis restarted empty, or the key lapsed
   * while we could not reach it): the node registers again. A longer one ends the registration.
   */
  private unreachableSince: number | undefined;
  /** When the renewal in flight was sent. */
  private renewSent = 0;
  private renewal: Promise<void> | undefined;
  private subscriber: RedisClient | undefined;
  private readonly streams = new Set<EventStream<DirectoryEvent>>();
  private readonly watchState = new Map<string, NodeRecord>();
  // Pub/sub events are newer than any member-list read that started before them: a read
  // only changes nodes that no event touched since it began.
  private eventSeq = 0;
  private readonly touchedAt = new Map<string, number>();
  private watchTimer: NodeJS.Timeout | undefined;
  /** Whether the known set was seeded: until a member-list read succeeds, each read seeds it. */
  private seeded = false;
  private closed = false;
  private readonly channel: string;

  private constructor(
    private readonly redis: RedisClient,
    readonly url: string,
    private readonly prefix: string,
    private readonly ttlMs: number,
    private readonly heartbeatMs: number,
    private readonly watchIntervalMs: number,
  ) {
    super();
    this.channel = `${prefix}events`;
    // Connected again, perhaps to a restarted Redis: renew now rather than at the next
    // heartbeat, which puts our lease and names back if Redis lost them.
    redis.on('ready', () => {
      if (debugLog.enabled) debugLog(`directory: connected to Redis at ${url} again${this.self ? `: renewing node "${this.self.nodeId}"` : ''}`);
      void this.renew();
    });
  }

  async register(node: NodeRecord): Promise<void> {
    this.assertOpen('register');
    const sent = performance.now();
    const holder = await this.put(node);
    if (holder !== undefined) {
      throw new RvmaError(
        'ERR_RVMA_DIRECTORY_CONFLICT',
        `RedisDirectory.register: node "${node.nodeId}" is held by another live incarnation (${holder})`,
      );
    }
    this.self = { ...node };
    this.leaseFrom = sent;
    this.unreachableSince = undefined;
    if (debugLog.enabled) debugLog(`directory: registered node "${node.nodeId}" (incarnation ${node.incarnation}), lease ${this.ttlMs} ms`);
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  async deregister(): Promise<void> {
    const self = this.self;
    if (!self) return;
    this.self = undefined;
    this.bound.clear();
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    await this.run('deregister', () =>
      this.redis.eval(DEREGISTER, 3, this.nodeKey(self.nodeId), this.membersKey(), this.namesKey(self.nodeId),
        self.nodeId, self.incarnation, this.channel, this.nameKey('')),
    );
  }

  async resolveNode(nodeId: string): Promise<NodeRecord | undefined> {
    const raw = await this.run('resolveNode', () => this.redis.get(this.nodeKey(nodeId)));
    return raw ? parseRecord(raw) : undefined;
  }

  async resolveLabel(label: string): Promise<NodeRecord | undefined> {
    return (await this.list()).find((node) => node.labels.includes(label));
  }

  async bindName(name: string, vaddr: bigint): Promise<void> {
    const self = this.registered('bindName');
    try {
      await this.bind(self, name, vaddr);
    } catch (error) {
      if ((error as RvmaError).code !== 'ERR_RVMA_NOT_REGISTERED') throw error;
      // Our key is gone while we hold the lease (Redis restarted empty, and no renewal has put
      // it back yet): a renewal (the one in flight, or a new one) registers us again, or finds
      // the registration lost.
      await this.renew();
      if (this.self !== self) throw error;
      await this.bind(self, name, vaddr);
    }
    this.bound.set(name, vaddr);
  }

  async unbindName(name: string): Promise<void> {
    const self = this.self;
    // Who owns the name is decided in Redis: our local record of what we bound goes stale
    // when our lease lapses and another node binds the name.
    const result = self
      ? await this.run('unbindName', () =>
          this.redis.eval(UNBIND, 2, this.nameKey(name), this.namesKey(self.nodeId), self.nodeId, self.incarnation, name,
            this.nodeKey('')),
        )
      : (await this.resolveName(name)) && 'TAKEN'; // not registered: no live binding is ours
    this.bound.delete(name);
    if (result === 'TAKEN') {
      throw new RvmaError('ERR_RVMA_DIRECTORY_CONFLICT', `RedisDirectory.unbindName: "${name}" is bound by another live node`);
    }
  }

  async resolveName(name: string): Promise<NameBinding | undefined> {
    const raw = await this.run('resolveName', () => this.redis.get(this.nameKey(name)));
    if (!raw) return undefined;
    const b = JSON.parse(raw) as { nodeId: string; incarnation: string; vaddr: string };
    // A binding outlives its node only until the lease lapses; never hand out a dead one.
    const owner = await this.resolveNode(b.nodeId);
    if (!owner || owner.incarnation !== b.incarnation) return undefined;
    return { name, nodeId: b.nodeId, incarnation: b.incarnation, vaddr: BigInt(b.vaddr) };
  }

  async list(): Promise<NodeRecord[]> {
    const ids = await this.run('list', () => this.redis.smembers(this.membersKey()));
    if (ids.length === 0) return [];
    const raws = await this.run('list', () => this.redis.mget(ids.map((id) => this.nodeKey(id))));
    const gone = ids.filter((_, i) => raws[i] === null);
    if (gone.length) void this.redis.srem(this.membersKey(), ...gone).catch(() => {});
    return raws.filter((raw): raw is string => raw !== null).map(parseRecord);
  }

  async listNames(): Promise<NameBinding[]> {
    const nodes = await this.list();
    const sets = await Promise.all(nodes.map((node) => this.run('listNames', () => this.redis.smembers(this.namesKey(node.nodeId)))));
    const names = [...new Set(sets.flat())].sort();
    if (names.length === 0) return [];
    const raws = await this.run('listNames', () => this.redis.mget(names.map((name) => this.nameKey(name))));
    const live = new Map(nodes.map((node) => [node.nodeId, node.incarnation]));
    const bindings: NameBinding[] = [];
    raws.forEach((raw, i) => {
      if (!raw) return;
      const b = JSON.parse(raw) as { nodeId: string; incarnation: string; vaddr: string };
      // A binding left by an earlier incarnation of a live node id is not that node's.
      if (live.get(b.nodeId) === b.incarnation) bindings.push({ name: names[i], nodeId: b.nodeId, incarnation: b.incarnation, vaddr: BigInt(b.vaddr) });
    });
    return bindings;
  }

  watch(options?: { signal?: AbortSignal }): AsyncIterableIterator<DirectoryEvent> {
    this.assertOpen('watch');
    const stream: EventStream<DirectoryEvent> = new EventStream(
      WATCH_LIMIT,
      () => {
        this.streams.delete(stream);
        if (this.streams.size === 0) this.stopWatching();
      },
      options?.signal,
    );
    if (stream.done) return stream;
    this.streams.add(stream);
    if (this.streams.size === 1) this.startWatching();
    return stream;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.deregister();
    } catch {
      // Unreachable Redis: the lease lapses on its own.
    }
    this.closed = true;
    for (const stream of [...this.streams]) stream.end();
    this.redis.disconnect();
  }

  private startWatching(): void {
    this.subscriber = this.redis.duplicate();
    this.subscriber.on('error', () => {});
    this.subscriber.on('message', (_channel: string, message: string) => {
      const cut = message.indexOf('\n');
      const type = message.slice(0, cut) as DirectoryEvent['type'];
      const node = parseRecord(message.slice(cut + 1));
      this.touchedAt.set(node.nodeId, ++this.eventSeq);
      this.observe(type, node);
    });
    void this.subscriber.subscribe(this.channel).catch(() => {});
    // Seed the known set, then compare periodically: a lease that lapsed publishes nothing.
    this.seeded = false;
    void this.reconcile();
    this.watchTimer = setInterval(() => void this.reconcile(), this.watchIntervalMs);
    this.watchTimer.unref(); // the reconciling timer alone must not keep a process alive
  }

  private stopWatching(): void {
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = undefined;
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.watchState.clear();
    this.touchedAt.clear();
  }

  private observe(type: DirectoryEvent['type'], node: NodeRecord): void {
    const known = this.watchState.get(node.nodeId);
    if (type === 'leave') {
      if (!known || known.incarnation !== node.incarnation) return;
      this.watchState.delete(node.nodeId);
    } else {
      if (known && JSON.stringify(known) === JSON.stringify(node)) return;
      if (known && known.incarnation !== node.incarnation) this.deliver({ type: 'leave', node: known });
      this.watchState.set(node.nodeId, node);
      type = known && known.incarnation === node.incarnation ? 'update' : 'join';
    }
    this.deliver({ type, node } as DirectoryEvent);
  }

  private async reconcile(): Promise<void> {
    const began = this.eventSeq;
    let nodes: NodeRecord[];
    try {
      nodes = await this.list();
    } catch {
      return; // Redis away: try again next interval (a seed that failed too: the nodes already there are no joins)
    }
    if (!this.streams.size) return; // the watches ended meanwhile
    const seed = !this.seeded;
    this.seeded = true;
    const stale = (id: string) => (this.touchedAt.get(id) ?? 0) > began;
    const live = new Map(nodes.map((n) => [n.nodeId, n]));
    for (const [id, known] of [...this.watchState]) {
      const now = live.get(id);
      if (!stale(id) && (!now || now.incarnation !== known.incarnation)) this.observe('leave', known);
    }
    for (const node of nodes) {
      if (stale(node.nodeId)) continue;
      if (seed) this.watchState.set(node.nodeId, node);
      else this.observe('join', node);
    }
    for (const [id, at] of this.touchedAt) if (at <= began) this.touchedAt.delete(id);
  }

  private deliver(event: DirectoryEvent): void {
    for (const stream of this.streams) stream.push(event);
  }

  private beat(): void {
    if (!this.renewing) {
      void this.renew();
      return;
    }
    // The last renewal is still unanswered (a connection that hangs rather than fails). Once
    // the whole lease has passed without an answer, we can no longer claim it. Checked after
    // the loop has read its sockets, so that an answer that arrived while it was blocked counts.
    setImmediate(() => {
      const self = this.self;
      if (self && this.renewing && this.unreachableTooLong(this.unreachableSince ?? this.renewSent)) this.report(this.lose(self, 'expired'));
    });
  }

  /**
   * Whether an outage that began at `since` ends the registration: it lasted a whole lease, or it
   * began after the lease had lapsed already (this process did not run: stopped, or stalled).
   */
  private unreachableTooLong(since: number): boolean {
    return performance.now() - since >= this.ttlMs || since >= this.leaseFrom + this.ttlMs;
  }

  /** Extends our lease (joining the renewal in flight, if any); finds out, and reports, when it was lost instead. */
  private renew(): Promise<void> {
    this.renewal ??= this.renewOnce().finally(() => (this.renewal = undefined));
    return this.renewal;
  }

  private async renewOnce(): Promise<void> {
    const self = this.self;
    if (!self || this.renewing || this.closed) return;
    this.renewing = true;
    const sent = performance.now();
    this.renewSent = sent;
    let lost: RegistrationLostInfo | undefined;
    try {
      const [status, holder] = statusOf(
        await this.redis.eval(HEARTBEAT, 2, this.nodeKey(self.nodeId), this.namesKey(self.nodeId), self.incarnation,
          this.ttlMs, this.nameKey('')),
      );
      // Redis could not be reached from then on at most (this renewal's wait counts too).
      const outage = this.unreachableSince ?? sent;
      this.unreachableSince = undefined;
      if (this.self !== self) return; // deregistered, or registered anew, meanwhile
      if (status === 'OK') this.leaseFrom = Math.max(this.leaseFrom, sent);
      else if (status === 'CONFLICT') lost = this.lose(self, 'takenOver', holder);
      // Gone, though we reached Redis within our lease and were never cut off for a whole one:
      // Redis lost its data (a restart or a failover), or the key lapsed while Redis could not
      // be reached. Put it back, unless another incarnation got there first.
      else if (!this.unreachableTooLong(outage)) {
        if (debugLog.enabled) debugLog(`directory: the record of node "${self.nodeId}" is gone from Redis (restarted or failed over): registering it again`);
        lost = await this.restore(self);
      }
      else lost = this.lose(self, 'expired');
    } catch (error) {
      this.unanswered(error);
      // Redis unreachable: ioredis reconnects, and 'ready' renews at once. An outage as long as
      // a lease ends the registration, whatever Redis says later.
      if (this.unreachableSince === undefined && debugLog.enabled) debugLog(`directory: cannot renew node "${self.nodeId}" at ${this.url}: ${(error as Error).message}`);
      this.unreachableSince ??= sent;
      if (this.unreachableTooLong(this.unreachableSince)) lost = this.lose(self, 'expired');
    } finally {
      this.renewing = false;
    }
    // Outside the try: an exception thrown by a listener is the listener's, not a Redis failure.
    this.report(lost);
  }

  private report(lost: RegistrationLostInfo | undefined): void {
    if (!lost) return;
    if (debugLog.enabled) debugLog(`directory: registration of node "${lost.nodeId}" lost: ${lost.reason}${lost.takenBy ? ` (taken by incarnation ${lost.takenBy})` : ''}`);
    this.emit('lost', lost);
  }

  /** Registers again with the same record and rebinds our names (after Redis lost them). */
  private async restore(self: NodeRecord): Promise<RegistrationLostInfo | undefined> {
    const sent = performance.now();
    let holder: string | undefined;
    try {
      holder = await this.put(self);
    } catch {
      return undefined; // the next heartbeat tries again
    }
    if (this.self !== self) return undefined;
    if (holder !== undefined) return this.lose(self, 'takenOver', holder);
    this.leaseFrom = Math.max(this.leaseFrom, sent);
    for (const [name, vaddr] of [...this.bound]) {
      try {
        await this.bind(self, name, vaddr);
      } catch (error) {
        // Bound by another node while Redis was empty: the name is theirs now.
        if ((error as RvmaError).code === 'ERR_RVMA_DIRECTORY_CONFLICT') this.bound.delete(name);
        else return undefined; // the next heartbeat tries again
      }
    }
    return undefined;
  }

  /** Ends our registration locally, without touching Redis; returns what to report. */
  private lose(self: NodeRecord, reason: RegistrationLostInfo['reason'], takenBy?: string): RegistrationLostInfo | undefined {
    if (this.self !== self) return undefined;
    this.self = undefined;
    this.bound.clear();
    this.unreachableSince = undefined;
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    return { nodeId: self.nodeId, incarnation: self.incarnation, reason, ...(takenBy === undefined ? {} : { takenBy }) };
  }

  /** Writes our record with a fresh lease; the incarnation holding the node id if it is another. */
  private async put(node: NodeRecord): Promise<string | undefined> {
    const [status, holder] = statusOf(
      await this.run('register', () =>
        this.redis.eval(REGISTER, 2, this.nodeKey(node.nodeId), this.membersKey(), node.nodeId, node.incarnation,
          JSON.stringify(node), this.ttlMs, this.channel),
      ),
    );
    return status === 'CONFLICT' ? holder : undefined;
  }

  private async bind(self: NodeRecord, name: string, vaddr: bigint): Promise<void> {
    const binding = JSON.stringify({ nodeId: self.nodeId, incarnation: self.incarnation, vaddr: vaddr.toString() });
    const result = await this.run('bindName', () =>
      this.redis.eval(BIND, 3, this.nodeKey(self.nodeId), this.nameKey(name), this.namesKey(self.nodeId),
        self.incarnation, binding, this.ttlMs, name, this.nodeKey(''), self.nodeId),
    );
    if (result === 'TAKEN') {
      throw new RvmaError('ERR_RVMA_DIRECTORY_CONFLICT', `RedisDirectory.bindName: "${name}" is bound by another live node`);
    }
    if (result === 'GONE') throw new RvmaError('ERR_RVMA_NOT_REGISTERED', 'RedisDirectory.bindName: the lease lapsed');
  }

  /** Runs a Redis command; a failure becomes ERR_RVMA_DIRECTORY_UNAVAILABLE, a refusal ERR_RVMA_AUTH. */
  private async run<T>(call: string, command: () => Promise<T>): Promise<T> {
    this.assertOpen(call);
    try {
      return await command();
    } catch (cause) {
      throw directoryError(`RedisDirectory.${call}`, cause);
    }
  }

  /**
   * A renewal went unanswered for commandTimeoutMs on a connection that looks up: Redis was cut
   * off without a word. That connection is given up for a new one, which reaches a Redis that is
   * back at once (the old one would resume only at TCP's next retransmission, seconds later).
   * Only a renewal, whose command and answer are a few bytes: a large read (a watcher's member
   * list) may take that long on a busy machine, and dropping the connection would fail every
   * command on it.
   */
  private unanswered(error: unknown): void {
    if ((error as Error | undefined)?.message !== COMMAND_TIMED_OUT || this.closed || this.redis.status !== 'ready') return;
    if (debugLog.enabled) debugLog(`directory: no answer from Redis at ${this.url} within the command timeout: connecting again`);
    this.redis.disconnect(true);
  }

  private registered(call: string): NodeRecord {
    this.assertOpen(call);
    if (!this.self) throw new RvmaError('ERR_RVMA_NOT_REGISTERED', `RedisDirectory.${call}: register() first`);
    return this.self;
  }

  private assertOpen(call: string): void {
    if (this.closed) throw new RvmaError('ERR_RVMA_CLOSED', `RedisDirectory.${call}: the directory is closed`);
  }

  private nodeKey(id: string): string {
    return `${this.prefix}node:${id}`;
  }
  private nameKey(name: string): string {
    return `${this.prefix}name:${name}`;
  }
  private namesKey(id: string): string {
    return `${this.prefix}names:${id}`;
  }
  private membersKey(): string {
    return `${this.prefix}members`;
  }
}

/** `namespace`, or its former name `cluster` (both given: they must agree). */
function namespaceOf(call: string, o: RedisDirectoryOptions): string {
  const given = o.namespace === undefined ? undefined : checkString(call, 'namespace', o.namespace);
  const former = o.cluster === undefined ? undefined : checkString(call, 'cluster', o.cluster);
  if (given !== undefined && former !== undefined && given !== former) {
    throw invalid(call, `namespace "${given}" and cluster "${former}" (its former name) disagree: give namespace alone`);
  }
  return given ?? former ?? 'default';
}

function parseRecord(raw: string): NodeRecord {
  return JSON.parse(raw) as NodeRecord;
}

/** A script's answer: its status, and for CONFLICT the incarnation holding the node id. */
function statusOf(reply: unknown): [string, string | undefined] {
  return Array.isArray(reply) ? [String(reply[0]), String(reply[1])] : [String(reply), undefined];
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
