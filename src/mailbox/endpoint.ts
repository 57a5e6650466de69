// An RVMA endpoint: opens mailboxes, puts into other endpoints' mailboxes, and routes the
// native event batches (completions, put outcomes, releases) to the waiting promises.
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { Directory, NodeRecord, RegistrationLostInfo } from '../directory/directory';
import { MemoryDirectory } from '../directory/memory-directory';
import { EVENT_WORDS, EventKind, type NativeEndpoint, type NativeEndpointOptions, native } from '../native';
import { CompletionWordsView, SLOTS_PER_PAGE, SLOT_WORDS } from './completion-words';
import { RvmaError, codeOfStatus, hex, nativeFailure, statusError } from '../base/errors';
import { type EpochType, Mailbox, type MailboxHost } from './mailbox';
import { MemoryIds } from './memory-ids';
import type { PutData } from './put-data';
import { LoopHolder } from './loop-holder';
import { type Destination, PutSender } from './put-sender';
import { COUNTER_SLOTS_PER_PAGE, COUNTER_SLOT_WORDS, PutCounter, type PutCounterHost, counterOfPutId } from './put-counter';
import { Region, type RegionHost } from './region';
import {
  type Capabilities,
  DYNAMIC_VADDR_BASE,
  type EndpointOptions,
  MAX_BUFFERS_LIMIT,
  type PeerLostInfo,
  type ProgressMode,
  type ProtocolErrorInfo,
  type AuthFailedInfo,
  RESERVED_VADDR_MAX,
  parseCreateOptions,
} from './endpoint-options';
import {
  type MailboxOptions,
  type CountedPut,
  type CountedPutOptions,
  type PutOptions,
  type RegionOptions,
  parseCountedPutOptions,
  parsePutOptions,
} from './call-options';
import { debugLog } from '../base/debug-log';
import { hostIdentity } from './host-identity';
import { Resolver, type Route, type RoutePolicy, routeOf } from './resolver';
import { lend } from './lent-memory';
import {
  type U64,
  U64_MAX,
  checkBoolean,
  checkBytes,
  checkInteger,
  checkOneOf,
  checkOptions,
  checkString,
  checkU64,
  invalid,
  parseAllow,
} from '../base/validate';
import { type LoopHold, Wait, type WaitOptions, parseWaitOptions } from '../base/wait';

export { DYNAMIC_VADDR_BASE, RESERVED_VADDR_MAX } from './endpoint-options';
export type {
  Capabilities,
  RdmaDevice,
  RdmaPort,
  EndpointOptions,
  PeerLostInfo,
  ProgressMode,
  ProtocolErrorInfo,
  AuthFailedInfo,
  ProviderName,
  TcpOptions,
} from './endpoint-options';
export type {
  RegionOptions,
  MailboxOptions,
  CountedPutOptions,
  PutOptions,
} from './call-options';
export type { ShmOptions } from './shm-options';
export type { AuthOptions } from './auth-options';
export type { PutData } from './put-data';

let builtProviders: string[] | undefined;
/** The providers of this build: fixed, so read once (a capabilities read queries every RDMA port). */
function providersBuilt(): string[] {
  return [...(builtProviders ??= native().capabilities().providers)];
}

/** A peer this endpoint is connected to, and how (see Endpoint.peers). */
export interface PeerInfo {
  nodeId: string;
  /** 'tcp', 'shm' or 'verbs'. */
  provider: string;
  /**
   * shm: 'cma' when this endpoint's large puts are pulled by the peer straight from our memory
   * (process_vm_readv), 'copy' when they go through the shared ring in chunks (CMA refused or
   * disabled). 'arena' once one of them was copied with one memcpy through a shared arena: the
   * peer copied it out of ours (its source was allocBuffer memory), or we wrote it into the
   * peer's posted buffer (shm.senderWrites); the others are still pulled. '' otherwise.
   */
  detail: string;
}

/** How often this endpoint made its process wake up (see Endpoint.stats). */
export interface EndpointStats {
  /**
   * Turns of the event loop in which this endpoint had work after the loop had been free to
   * sleep: a watched descriptor was ready (loop progress) or the progress thread handed over
   * completions. Counted once per turn: the wake-ups of the JavaScript thread it caused.
   */
  wakeups: number;
  /** Thread progress: how often the progress thread woke from a sleep with work. 0 in loop progress. */
  progressWakeups: number;
}

/** The verbs registration cache's counters (docs/api.md, "Memory registration"). */
export interface RegistrationStats {
  /** Memory registrations made with the device. */
  registrations: number;
  /** Large puts, reads into mailbox buffers and raw writes served by a registration that already existed. */
  reuses: number;
  /** Unused registrations dropped for room (verbs.registrationCacheBytes, or the locked-memory limit). */
  evictions: number;
  /** Bytes of memory registered now, in use or kept. */
  registeredBytes: number;
}

/** The events an Endpoint emits, with their listeners' arguments (docs/api.md, Events). */
export interface EndpointEvents {
  peerLost: [info: PeerLostInfo];
  protocolError: [info: ProtocolErrorInfo];
  authFailed: [info: AuthFailedInfo];
  registrationLost: [info: RegistrationLostInfo];
}

// EventEmitter<T> already types these, but reports a misspelt event name as a listener that does
// not fit `never`; checking the name against the map's keys reports the name itself.
export interface Endpoint {
  on<K extends keyof EndpointEvents>(event: K, listener: (...args: EndpointEvents[K]) => void): this;
  once<K extends keyof EndpointEvents>(event: K, listener: (...args: EndpointEvents[K]) => void): this;
  off<K extends keyof EndpointEvents>(event: K, listener: (...args: EndpointEvents[K]) => void): this;
}

export class Endpoint extends EventEmitter<EndpointEvents> {
  /** What this build contains and which RDMA devices are present. */
  static get capabilities(): Capabilities {
    return native().capabilities();
  }

  /** Creates an endpoint. Rejects with ERR_RVMA_INVALID_ARGUMENT on bad options or a busy listen address. */
  static async create(options?: EndpointOptions): Promise<Endpoint> {
    const { nodeId, progress, provider, listen, groups, labels, directory: given, authSecret } = parseCreateOptions(
      options,
      providersBuilt(),
    );
    const ownsDirectory = given === undefined;
    const directory = given ?? new MemoryDirectory();
    let endpoint: Endpoint;
    try {
      endpoint = new Endpoint(nodeId, progress, { provider, listen, groups, authSecret }, directory, ownsDirectory);
    } finally {
      authSecret?.fill(0); // the native side holds its copy
    }
    endpoint.labels = Object.freeze([...labels]);
    try {
      await directory.register(endpoint.record(labels));
    } catch (error) {
      await endpoint.close();
      throw error;
    }
    endpoint.followRegistration();
    return endpoint;
  }

  private readonly handle: NativeEndpoint;
  private readonly mailboxes = new Map<number, Mailbox>();
  private readonly sender: PutSender;
  private readonly counters = new Map<number, PutCounter>();
  private readonly counterPages: Uint32Array[] = [];
  private readonly counterHost: PutCounterHost;
  private readonly connects = new Map<number, Wait<string>>();
  private readonly regions = new Map<number, Region>();
  private readonly regionHost: RegionHost;
  private readonly resolver: Resolver;
  private readonly routing: RoutePolicy;
  /** Names the memory of puts and posts for the verbs registration cache; undefined without verbs. */
  private readonly memory: MemoryIds | undefined;
  /** @internal */ readonly nativeIncarnation: bigint;
  /** Labels this endpoint published in its directory (e.g. its TensorFlow task names). */
  labels: readonly string[] = [];
  private readonly pages: Uint32Array[] = [];
  private readonly host: MailboxHost;
  private nextRequestId = 1;
  private nextDynamicVaddr = DYNAMIC_VADDR_BASE;
  private readonly loop: LoopHolder;
  private isClosed = false;
  private isRegistered = false;
  private unfollow: (() => void) | undefined;
  /**
   * Where peers can dial this endpoint as its listen option asked ('tcp://HOST:PORT',
   * 'rdma://HOST:PORT' with the port as bound, or 'shm://NAME'), or '' if it was given none.
   * A wildcard listen (0.0.0.0, [::]) means nothing to other hosts, so it is reported with this
   * host's name, as the directory record carries it.
   */
  readonly address: string;
  /**
   * Every address this endpoint accepts peers at, by kind ({ tcp?, rdma?, shm? }), as the
   * directory record publishes them: with provider 'auto' an endpoint also accepts same-host
   * peers at an shm:// name of its own.
   */
  readonly addresses: Readonly<Record<string, string>>;
  /** The listening socket's own address as bound, wildcard host included; '' if it does not listen. */
  readonly boundAddress: string;
  /**
   * Set when provider 'auto' was given an 'rdma://IP:PORT' listen address and verbs cannot run
   * here (not built, no RDMA device with an ACTIVE port, the address on none): why. The endpoint
   * then runs tcp and listens at 'tcp://IP:PORT' instead.
   */
  readonly verbsFallback: string | undefined;

  private constructor(
    readonly nodeId: string,
    readonly progress: ProgressMode,
    options: NativeEndpointOptions,
    /** Where this endpoint is registered and resolves its peers. */
    readonly directory: Directory,
    private readonly ownsDirectory: boolean,
  ) {
    super();
    // The native side holds this callback; a WeakRef keeps it from pinning the endpoint.
    const self = new WeakRef(this);
    try {
      this.handle = new (native().NativeEndpoint)(
        nodeId,
        progress === 'thread' ? 1 : 0,
        (events, words, texts) => self.deref()?.onEvents(events, words, texts),
        options,
      );
    } catch (error) {
      // E.g. the verbs provider's receive buffers refused by the kernel (the locked-memory
      // limit), or a listen address another socket holds: typed, so the caller can act on it.
      throw nativeFailure(error, 'Endpoint.create');
    }
    this.loop = new LoopHolder(this, this.handle, () => this.isClosed);
    this.verbsFallback = this.handle.fallback() || undefined;
    const listening = this.handle.listenAddresses();
    this.routing = { loopback: 'loopback' in listening, rdma: 'verbs' in listening, shm: 'shm' in listening };
    this.resolver = new Resolver(directory, this.routing);
    this.memory = this.routing.rdma
      ? new MemoryIds((id) => {
          if (!this.isClosed) this.handle.forgetMemory(id);
        })
      : undefined;
    this.boundAddress = options.listen?.startsWith('shm://') ? listening.shm : listening.tcp || listening.verbs || '';
    this.address = publishable(this.boundAddress);
    const addresses: Record<string, string> = {};
    if (listening.tcp) addresses.tcp = publishable(listening.tcp);
    if (listening.verbs) addresses.rdma = publishable(listening.verbs);
    if (listening.shm) addresses.shm = listening.shm;
    this.addresses = Object.freeze(addresses);
    this.nativeIncarnation = this.handle.incarnation();
    this.incarnationHex = this.handle.incarnation().toString(16).padStart(16, '0');
    this.host = {
      handle: this.handle,
      nodeId,
      waiting: this.holdLoop,
      released: (id) => this.mailboxes.delete(id),
      memoryOf: (buffer) => this.memory?.of(buffer) ?? 0,
    };
    this.regionHost = {
      handle: this.handle,
      waiting: this.holdLoop,
      released: (id) => this.regions.delete(id),
    };
    this.sender = new PutSender(
      {
        nodeId,
        isClosed: () => this.isClosed,
        holdLoop: this.holdLoop,
        assertOpen: (call) => this.assertOpen(call),
        forget: (target) => this.resolver.forget(target),
      },
      this.handle,
      this.memory,
    );
    this.counterHost = {
      nodeId,
      writesOnThisThread: progress === 'loop',
      armPutCounter: (slot, level) => this.isClosed || this.handle.armPutCounter(slot, level),
      releasePutCounter: (slot) => {
        this.counters.delete(slot);
        if (!this.isClosed) this.handle.releasePutCounter(slot);
      },
      skipCountedPut: (slot, index) => {
        if (!this.isClosed) this.handle.skipCountedPut(slot, index);
      },
      waiting: this.holdLoop,
    };
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Whether this endpoint is registered in its directory: false once the directory reported
   * the registration lost (see the 'registrationLost' event), and after close().
   */
  get registered(): boolean {
    return this.isRegistered && !this.isClosed;
  }

  /** What the verbs registration cache did so far; undefined when this endpoint runs no verbs. */
  registrationStats(): RegistrationStats | undefined {
    const s = this.isClosed ? undefined : this.handle.registrationStats();
    return s && { registrations: s[0], reuses: s[1], evictions: s[2], registeredBytes: s[3] };
  }

  /** This start of the endpoint (random u64, hex): a restarted node gets a new one. */
  get incarnation(): string {
    return this.incarnationHex;
  }
  private readonly incarnationHex: string;

  /** Binds a name in the directory to one of this endpoint's mailboxes (see putNamed). */
  bindName(name: string, vaddr: U64): Promise<void> {
    const call = 'Endpoint.bindName';
    try {
      checkString(call, 'name', name);
      const v = checkU64(call, 'vaddr', vaddr, 1n);
      this.assertOpen(call);
      return this.directory.bindName(name, v);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Puts into the mailbox bound to name, on whichever node bound it. Rejects with
   * ERR_RVMA_NO_NAME when no live node has bound it.
   */
  putNamed(name: string, data: PutData, options?: PutOptions): Promise<void> {
    const call = 'Endpoint.putNamed';
    try {
      checkString(call, 'name', name);
      const o = parsePutOptions(call, options);
      const route = this.directory.resolveName(name).then(async (binding) => {
        if (!binding) throw new RvmaError('ERR_RVMA_NO_NAME', `${call}: no live node has bound "${name}"`);
        const record = await this.directory.resolveNode(binding.nodeId);
        if (!record || record.incarnation !== binding.incarnation) {
          throw new RvmaError('ERR_RVMA_NO_NAME', `${call}: the node that bound "${name}" is gone`);
        }
        return { route: routeOf(record, this.routing), vaddr: binding.vaddr };
      });
      return this.sender.send(call, name, route, data, o.offset, o.append, false, o);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private record(labels: string[]): NodeRecord {
    return {
      nodeId: this.nodeId,
      incarnation: this.incarnationHex,
      addresses: { ...this.addresses },
      host: hostname(),
      hostId: hostIdentity(),
      pid: process.pid,
      capabilities: providersBuilt(),
      labels,
      startTime: Date.now(),
    };
  }

  /**
   * Hears from the directory when this registration ends without close() (another incarnation
   * took the node id, or the lease lapsed). Through a WeakRef, so that a directory the caller
   * keeps does not keep a dropped endpoint alive.
   */
  private followRegistration(): void {
    const self = new WeakRef(this);
    const listener = (info: RegistrationLostInfo): void => self.deref()?.registrationLost(info);
    this.directory.on?.('lost', listener);
    this.unfollow = () => this.directory.off?.('lost', listener);
    this.isRegistered = true;
  }

  private registrationLost(info: RegistrationLostInfo): void {
    // One directory per endpoint is the rule, but a shared one reports other nodes too.
    if (!this.registered || info.nodeId !== this.nodeId || info.incarnation !== this.incarnationHex) return;
    this.isRegistered = false;
    this.emit('registrationLost', info);
  }

  /**
   * The peers this endpoint's transports are connected to, and which transport each uses
   * (in-process peers over loopback are not listed).
   */
  peers(): PeerInfo[] {
    if (this.isClosed) return [];
    return this.handle.peers().map(([nodeId, provider, detail]) => ({ nodeId, provider, detail }));
  }

  /**
   * Counts since the endpoint was created (after close(): as they were then). They let an
   * application, a test or a benchmark see wake-ups per message without timing anything.
   */
  stats(): EndpointStats {
    if (this.isClosed) return { ...this.finalStats };
    const [wakeups, progressWakeups] = this.handle.wakeupCounts();
    return { wakeups, progressWakeups };
  }
  private finalStats: EndpointStats = { wakeups: 0, progressWakeups: 0 };

  /** Mailboxes open on this endpoint, as the native table counts them. */
  get mailboxCount(): number {
    return this.isClosed ? 0 : this.handle.openCount();
  }

  /** Opens a mailbox at vaddr (1 .. 2^64-1, above the reserved 0x1..0xFFFF). */
  openMailbox(vaddr: U64, options?: MailboxOptions): Mailbox {
    const call = 'Endpoint.openMailbox';
    const v = checkU64(call, 'vaddr', vaddr, 1n);
    if (v <= RESERVED_VADDR_MAX) {
      throw invalid(call, `vaddr ${hex(v)} is in the range reserved for the library (0x1..0xffff)`);
    }
    return this.openAt(call, v, options);
  }

  /**
   * Opens a mailbox at a fresh vaddr from the dynamic range (2^63 and up): for one-time
   * mailboxes whose vaddr is handed to a sender, as the rendezvous does for each tensor.
   */
  openDynamicMailbox(options?: MailboxOptions): Mailbox {
    const call = 'Endpoint.openDynamicMailbox';
    for (;;) {
      const vaddr = this.nextDynamicVaddr;
      this.nextDynamicVaddr = vaddr === U64_MAX ? DYNAMIC_VADDR_BASE : vaddr + 1n;
      try {
        return this.openAt(call, vaddr, options);
      } catch (error) {
        if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_MAILBOX_EXISTS')) throw error;
      }
    }
  }

  /**
   * @internal Holds the event loop while a wait is pending (Wait's hold): the endpoint's own
   * waits and those of the library's protocols built on it (a ring's recv, control, around).
   */
  readonly holdLoop: LoopHold = (delta) => this.loop.waiting(delta);

  /**
   * @internal Opens any vaddr, reserved ones included (used by the library's own protocols).
   * recycle: a retired buffer is posted again at once (for completions native code takes).
   */
  openAt(call: string, vaddr: bigint, options?: MailboxOptions, recycle = false): Mailbox {
    const o = checkOptions<MailboxOptions>(call, options, ['epoch', 'threshold', 'maxBuffers', 'allow', 'reportSender']);
    const epoch = checkOneOf<EpochType>(call, 'epoch', o.epoch ?? 'bytes', ['bytes', 'ops']);
    const threshold = o.threshold === undefined ? 0n : checkU64(call, 'threshold', o.threshold, 1n);
    const maxBuffers = checkInteger(call, 'maxBuffers', o.maxBuffers ?? 16, 1, MAX_BUFFERS_LIMIT);
    const allow = parseAllow(call, o.allow);
    const reportSender = o.reportSender === undefined ? false : checkBoolean(call, 'reportSender', o.reportSender);
    this.assertOpen(call);
    const opened = this.handle.openMailbox(vaddr, epoch === 'ops' ? 1 : 0, threshold, maxBuffers, allow, reportSender, recycle);
    if (typeof opened === 'number') throw statusError(opened, { op: call, vaddr });
    const [id, slot] = opened;
    const mailbox = new Mailbox(this.host, vaddr, id, epoch, threshold, this.wordsOf(slot));
    this.mailboxes.set(id, mailbox);
    return mailbox;
  }

  // The counted overload first: options held in a variable that names a counter would otherwise
  // match the promise overload, whose options share lazyAck, and be typed as a promise.
  /**
   * A counted put: returns at once, and `options.counter` counts it once it is placed or has
   * failed (see PutCounter). Throws on bad arguments; every later failure is counted and
   * reported by the counter's 'failed' event. Puts of up to PutCounter.COPY_MAX_BYTES are
   * copied now; larger data must not change until the counter has settled the put.
   */
  put(target: string | Endpoint, vaddr: U64, data: PutData, options: CountedPutOptions): void;
  /**
   * Puts data into mailbox vaddr of the target node. Resolves once the receiver placed it;
   * rejects with the receiver's refusal (ERR_RVMA_NO_MAILBOX, ERR_RVMA_NO_BUFFER, ...), or
   * ERR_RVMA_TIMEOUT / ERR_RVMA_ABORTED (the put may then still be placed). The data must not
   * change until the promise settles. `[head, data]` is one put of head's bytes followed by
   * data's, gathered natively (neither is copied in JavaScript).
   */
  put(target: string | Endpoint, vaddr: U64, data: PutData, options?: PutOptions): Promise<void>;
  put(target: string | Endpoint, vaddr: U64, data: PutData, options?: PutOptions | CountedPutOptions): Promise<void> | void {
    const call = 'Endpoint.put';
    if (isCounted(options)) {
      const o = parseCountedPutOptions(call, options);
      return this.sendCounted(call, target, checkU64(call, 'vaddr', vaddr, 1n), data, false, o);
    }
    try {
      const o = parsePutOptions(call, options);
      const v = checkU64(call, 'vaddr', vaddr, 1n);
      return this.sender.send(call, this.targetName(call, target), this.routeTo(target, v), data, o.offset, o.append, false, o);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Raw one-sided write into a peer's registered region (see registerRegion), addressed by
   * the region's key and a byte offset: the RDMA-write baseline that mailbox puts are
   * measured against. Needs a network provider (tcp, or verbs: a genuine RDMA write). Resolves
   * when the peer has the bytes.
   */
  rawWrite(
    target: string | Endpoint,
    key: U64,
    offset: U64,
    data: ArrayBufferView | ArrayBuffer,
    options?: WaitOptions,
  ): Promise<void>;
  /** A counted raw write: returns at once; `options.counter` counts it (see the counted put). */
  rawWrite(
    target: string | Endpoint,
    key: U64,
    offset: U64,
    data: ArrayBufferView | ArrayBuffer,
    options: Pick<CountedPutOptions, 'counter' | 'copy' | 'lazyAck'>,
  ): void;
  rawWrite(
    target: string | Endpoint,
    key: U64,
    offset: U64,
    data: ArrayBufferView | ArrayBuffer,
    options?: WaitOptions | Pick<CountedPutOptions, 'counter' | 'copy' | 'lazyAck'>,
  ): Promise<void> | void {
    const call = 'Endpoint.rawWrite';
    if (isCounted(options)) {
      const o = parseCountedPutOptions(call, options, ['counter', 'copy', 'lazyAck']);
      const k = checkU64(call, 'key', key, 1n);
      return this.sendCounted(call, target, k, data, true, { ...o, offset: checkU64(call, 'offset', offset) });
    }
    try {
      const o = parseWaitOptions(call, options);
      const k = checkU64(call, 'key', key, 1n);
      return this.sender.send(call, this.targetName(call, target), this.routeTo(target, k), data, checkU64(call, 'offset', offset), false, true, o);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A sender-side completion counter for puts and raw writes that name it: they return at
   * once, and the counter tells how many were placed or failed (see PutCounter).
   */
  createPutCounter(): PutCounter {
    const call = 'Endpoint.createPutCounter';
    this.assertOpen(call);
    const slot = this.handle.createPutCounter();
    if (slot < 0) throw statusError(-slot, { op: call, vaddr: 0n });
    const pageIndex = Math.floor(slot / COUNTER_SLOTS_PER_PAGE);
    let page = this.counterPages[pageIndex];
    if (!page) {
      const buffer = this.handle.putCounterPage(pageIndex);
      if (!buffer) throw new Error(`rvma internal: put counter page ${pageIndex} missing`);
      page = this.counterPages[pageIndex] = new Uint32Array(buffer);
    }
    const counter = new PutCounter(this.counterHost, slot, page, (slot % COUNTER_SLOTS_PER_PAGE) * COUNTER_SLOT_WORDS);
    this.counters.set(slot, counter);
    return counter;
  }

  /** Registers memory for raw one-sided writes from peers; hand region.key to the writers. */
  registerRegion(sizeOrBuffer: number | ArrayBufferView | ArrayBuffer, options?: RegionOptions): Region {
    const call = 'Endpoint.registerRegion';
    const allow = parseAllow(call, checkOptions<RegionOptions>(call, options, ['allow']).allow);
    this.assertOpen(call);
    const buffer =
      typeof sizeOrBuffer === 'number'
        ? new Uint8Array(native().allocBuffer(checkInteger(call, 'size', sizeOrBuffer, 1, 2 ** 40)))
        : lend(call, 'buffer', checkBytes(call, 'buffer', sizeOrBuffer));
    const [key, id] = this.handle.registerRegion(buffer, allow);
    const region = new Region(this.regionHost, key, id, buffer);
    this.regions.set(id, region);
    return region;
  }

  private targetName(call: string, target: string | Endpoint): string {
    return target instanceof Endpoint ? target.nodeId : checkString(call, 'target', target);
  }

  /** @internal How native code's own puts reach `nodeId` (peer and incarnation), now or once the directory answered. */
  nativeRoute(nodeId: string): Route | Promise<Route> {
    return this.resolver.route(nodeId);
  }

  /** The route and vaddr of a put, now or once the directory answered. */
  private routeTo(target: string | Endpoint, vaddr: bigint): Destination | Promise<Destination> {
    if (target instanceof Endpoint) return { route: { peer: target.nodeId, incarnation: target.nativeIncarnation }, vaddr };
    const route = this.resolver.route(target);
    return route instanceof Promise ? route.then((r) => ({ route: r, vaddr })) : { route, vaddr };
  }

  /**
   * @internal A ring frame handed to its native sending side (src/ring/outbound.ts), behind the
   * puts queued in this turn: 0, RING_NO_CREDIT, or the refusal status.
   */
  ringSend(outId: number, putId: number, data: Uint8Array, header: Uint8Array | undefined): number {
    return this.sender.ringSend(outId, putId, data, header);
  }

  /** A counted put or raw write: no promise, no per-put state here; the counter settles it. */
  private sendCounted(call: string, target: string | Endpoint, vaddr: bigint, data: PutData, raw: boolean, o: CountedPut): void {
    this.assertOpen(call);
    o.counter.checkUsable(call, this.counterHost);
    this.sender.sendCounted(call, this.targetName(call, target), vaddr, this.routeTo(target, vaddr), data, raw, o);
  }

  /**
   * Opens (or reuses) a connection to the endpoint listening at address ('tcp://HOST:PORT',
   * 'rdma://IP:PORT' over verbs, or 'shm://NAME' on this host)
   * and resolves with its node id, which put() then accepts as a target. Puts may also name
   * the address directly; they connect on first use.
   */
  connect(address: string, options?: WaitOptions): Promise<string> {
    const call = 'Endpoint.connect';
    try {
      checkString(call, 'address', address);
      if (!address.startsWith('tcp://') && !address.startsWith('rdma://') && !address.startsWith('shm://')) {
        throw invalid(call, `address must look like "tcp://HOST:PORT", "rdma://IP:PORT" or "shm://NAME", got "${address}"`);
      }
      const o = parseWaitOptions(call, options);
      this.assertOpen(call);
      const id = this.nextRequestId++;
      const wait = new Wait<string>(`${call} to ${address}`, o, () => this.connects.delete(id), this.holdLoop);
      if (wait.done) return wait.promise;
      this.connects.set(id, wait);
      const status = this.handle.connect(id, address);
      if (status !== 0) wait.reject(statusError(status, { op: call, vaddr: 0n, node: address }));
      return wait.promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Closes every mailbox and rejects everything pending with ERR_RVMA_CLOSED. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.finalStats = this.stats();
    this.isClosed = true;
    this.handle.close(); // joins the progress thread: nothing reads put data after this
    const error = new RvmaError('ERR_RVMA_CLOSED', `endpoint "${this.nodeId}" closed`);
    this.sender.endpointClosed(error);
    for (const counter of [...this.counters.values()]) counter.endpointClosed();
    this.counters.clear();
    for (const wait of [...this.connects.values()]) wait.reject(error);
    for (const mailbox of this.mailboxes.values()) mailbox.endpointClosed();
    this.mailboxes.clear();
    for (const region of this.regions.values()) region.endpointClosed();
    this.regions.clear();
    this.loop.endpointClosed();
    this.unfollow?.();
    try {
      if (this.ownsDirectory) await this.directory.close();
      else await this.directory.deregister();
    } catch {
      // An unreachable directory: the lease lapses by itself.
    }
  }

  /** events[0 .. words) hold the batch (the array is reused: read it now); texts as the events index them. */
  private onEvents(events: Float64Array, words: number, texts: string[] | undefined): void {
    for (let i = 0; i < words; i += EVENT_WORDS) {
      const kind = events[i];
      const id = events[i + 1];
      if (kind === EventKind.Completion) {
        const sender = events[i + 7] ? texts![events[i + 2]] : undefined;
        this.mailboxes.get(id)?.complete(events[i + 3], events[i + 4], events[i + 5], events[i + 6], sender);
      } else if (kind === EventKind.PutDone) {
        const reason = events[i + 6] === 1 ? texts![events[i + 2]] : undefined;
        const counted = counterOfPutId(id);
        if (counted && debugLog.enabled) debugLog(`endpoint "${this.nodeId}": a counted put failed: ${codeOfStatus(events[i + 7])}${reason ? ` (${reason})` : ''}`);
        if (counted) this.counters.get(counted.slot)?.putFailed(counted.index, events[i + 7], reason);
        else this.sender.settled(id, events[i + 7], reason);
      } else if (kind === EventKind.CounterReached) {
        this.counters.get(id)?.reached();
      } else if (kind === EventKind.MailboxReleased) {
        this.mailboxes.get(id)?.released();
      } else if (kind === EventKind.Connected) {
        const status = events[i + 7];
        const text = texts![events[i + 2]];
        const wait = this.connects.get(id);
        if (debugLog.enabled) debugLog(`endpoint "${this.nodeId}": connect ${status === 0 ? `reached node "${text}"` : `failed: ${codeOfStatus(status)} (${text})`}`);
        if (status === 0) {
          this.resolver.learn(text);
          wait?.resolve(text);
        } else wait?.reject(new RvmaError(codeOfStatus(status), `Endpoint.connect: ${text}`));
      } else if (kind === EventKind.RawWritten) {
        this.regions.get(id)?.written(events[i + 3], events[i + 5]);
      } else if (kind === EventKind.RegionReleased) {
        this.regions.get(id)?.released();
      } else if (kind === EventKind.PeerLost) {
        const at = events[i + 2];
        const info: PeerLostInfo = { nodeId: texts![at], incarnation: texts![at + 1], reason: texts![at + 2] };
        this.emit('peerLost', info);
      } else if (kind === EventKind.ProtocolError) {
        const at = events[i + 2];
        const info: ProtocolErrorInfo = { peer: texts![at], message: texts![at + 1] };
        this.emit('protocolError', info);
      } else if (kind === EventKind.Notify) {
        this.mailboxes.get(id)?.notified(events[i + 7] ? texts![events[i + 2]] : undefined);
      } else if (kind === EventKind.AuthFailed) {
        const at = events[i + 2];
        const info: AuthFailedInfo = { peer: texts![at], message: texts![at + 1] };
        this.emit('authFailed', info);
      }
    }
  }

  private wordsOf(slot: number): CompletionWordsView {
    const pageIndex = Math.floor(slot / SLOTS_PER_PAGE);
    let page = this.pages[pageIndex];
    if (!page) {
      const buffer = this.handle.completionPage(pageIndex);
      if (!buffer) throw new Error(`rvma internal: completion page ${pageIndex} missing`);
      page = this.pages[pageIndex] = new Uint32Array(buffer);
    }
    return new CompletionWordsView(page, (slot % SLOTS_PER_PAGE) * SLOT_WORDS);
  }

  private assertOpen(call: string): void {
    if (this.isClosed) throw new RvmaError('ERR_RVMA_CLOSED', `${call}: endpoint "${this.nodeId}" is closed`);
  }
}

/** Whether a put's options ask for the counted form. */
function isCounted(options: unknown): options is { counter: PutCounter } {
  return typeof options === 'object' && options !== null && (options as { counter?: unknown }).counter !== undefined;
}

/** A wildcard listen address means nothing to other hosts: publish this host's name instead. */
function publishable(address: string): string {
  return address.replace(/^(tcp|rdma):\/\/(0\.0\.0\.0|\[::\])(?=:\d+$)/, `$1://${hostname()}`);
}
