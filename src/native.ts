// The compiled addon: its typing (declarations only) and a loader whose failure says what to do.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Capabilities } from './mailbox/endpoint-options';
import { RvmaError } from './base/errors';

/** Events arrive as a Float64Array, EVENT_WORDS numbers per event (see native/engine.h). */
export const EVENT_WORDS = 8;
/** NativeEndpoint.put(): accepted, and the turn's end must flush(). */
export const PUT_ROUND_DUE = -1;
/** ringSend's and ringTake's answer when the neighbour has no free buffer: nothing was taken. */
export const RING_NO_CREDIT = -2;
export const enum EventKind {
  /** Word 7 = 1: word 2 indexes the batch's texts, the sender's node id (reportSender). */
  Completion = 1,
  /** Word 7: status; with word 6 = 1, word 2 indexes the batch's texts: why it failed. */
  PutDone = 2,
  MailboxReleased = 3,
  /** Word 2 indexes the batch's texts: the peer's node id, or why connecting failed. */
  Connected = 4,
  /** Word 2 indexes the batch's texts: "peer\nmessage". */
  ProtocolError = 5,
  /** id: region id, word 3: offset, word 5: length. */
  RawWritten = 6,
  RegionReleased = 7,
  /** Word 2 indexes the batch's texts: the node id, then its incarnation (hex). */
  PeerLost = 8,
  /** id: the put counter's slot, whose armed level was reached. */
  CounterReached = 9,
  /** As ProtocolError: the peer, then why it failed authentication. */
  AuthFailed = 10,
  /** id: a mailbox whose completions native code takes (a ring direction); word 7 = 1: word 2 indexes the batch's texts, why it broke. */
  Notify = 11,
}

export interface NativeEndpoint {
  /** [mailboxId, completionSlot], or a status number on refusal. */
  openMailbox(
    vaddr: bigint,
    epochType: 0 | 1,
    threshold: bigint,
    maxBuffers: number,
    allow?: string[],
    reportSender?: boolean,
    /** A retired buffer is posted again at once (a mailbox whose completions native code takes). */
    recycle?: boolean,
  ): [number, number] | number;
  /** 1: released now, 0: a release event follows (puts still in flight), negative: -status. */
  closeMailbox(vaddr: bigint): number;
  /** Who may put from now on (undefined: every node); a status number. */
  setMailboxAccess(vaddr: bigint, allow?: string[]): number;
  /** The buffer's index in the mailbox, or -status. */
  post(vaddr: bigint, bytes: Uint8Array, threshold: bigint, memory: number): number;
  incEpoch(vaddr: bigint): number;
  /**
   * Accepted (a PutDone event follows): 0, or PUT_ROUND_DUE when a provider holds work back for
   * the end of the turn (flush() then). Otherwise the refusal status.
   */
  put(
    putId: number,
    /** The destination, as route() numbered it. */
    route: number,
    vaddr: bigint,
    data: Uint8Array,
    offset: bigint,
    /** Placement and handling: putFlags() (src/mailbox/put-descriptor.ts). */
    flags: number,
    /** Names the memory under data (see MemoryIds); 0: unnamed. */
    memory: number,
    /** A gathered put: these bytes come first, then data's. */
    head?: Uint8Array,
  ): number;
  /** Sends the puts queued in this turn (loop progress). */
  flush(): void;
  /** The index puts name this destination by. */
  route(peer: string, incarnation: bigint | undefined): number;
  /** count small puts described in entries (see PutQueue), payloads in arena; then flush(). 0 or a status. */
  putQueued(entries: Float64Array, count: number, arena: Uint8Array): number;
  /** A counter's slot, or -status. */
  createPutCounter(): number;
  putCounterPage(index: number): ArrayBuffer | undefined;
  /** true: already settled `level` puts; otherwise a CounterReached event follows. */
  armPutCounter(slot: number, level: number): boolean;
  releasePutCounter(slot: number): void;
  /** A counted put that never reached the native side settled (index mod 2^32). */
  skipCountedPut(slot: number, index: number): void;
  /** The memory named `memory` was collected. */
  forgetMemory(memory: number): void;
  /** [registered, reused, evicted, cachedBytes]; undefined without verbs. */
  registrationStats(): [number, number, number, number] | undefined;
  /** [key, regionId] */
  registerRegion(bytes: Uint8Array, allow?: string[]): [bigint, number];
  /** 1: released now, 0: a release event follows, negative: -status. */
  deregisterRegion(key: bigint): number;
  /** 0: accepted (a Connected event follows), otherwise the refusal status. */
  connect(requestId: number, address: string): number;
  /** Each provider the endpoint runs, and where it accepts peers ('' for nowhere). */
  listenAddresses(): Record<string, string>;
  /** [nodeId, provider, detail] per connected peer. */
  peers(): [string, string, string][];
  /** Why 'auto' runs another provider in place of the one its listen address named, or ''. */
  fallback(): string;
  incarnation(): bigint;
  completionPage(index: number): ArrayBuffer | undefined;
  openCount(): number;
  /** [the event loop's wake-ups this endpoint caused, the progress thread's]. */
  wakeupCounts(): [number, number];
  ref(): void;
  unref(): void;
  close(): void;
  /**
   * The mailbox's completions go to a native ring direction whose buffers and words lie in slab
   * (src/ring/slab.ts); Notify events carry mailboxId. 0, or the refusal status.
   */
  ringOpen(mailboxId: number, vaddr: bigint, slab: Uint8Array, slots: number, frameBytes: number, stride: number, wordsBytes: number): number;
  /**
   * The direction's sender: credits go to its credits mailbox (dir 0: its frames to next, 1: to
   * prev), naming this member's ring mailboxes (base), the first of them now.
   */
  ringTarget(mailboxId: number, peer: string, incarnation: bigint, creditsVaddr: bigint, dir: 0 | 1, frameBytes: number, base: bigint): void;
  /** The frame in buffer `slot` was released (a credit that comes due goes at once): 0 or a status. */
  ringRelease(mailboxId: number, slot: number): number;
  /** A credit that came due on an arrival (the slab's grantDue word) goes now; with again, the credits granted so far go again. */
  ringGrant(mailboxId: number, again?: boolean): void;
  /** The mailbox (opened with recycle) takes credit records into block (src/ring/slab.ts): 0 or a status. */
  ringCreditsOpen(mailboxId: number, vaddr: bigint, block: Uint8Array): number;
  /** Credits of direction dir count only from this node's instance whose ring mailboxes are at base. */
  ringCreditsExpect(mailboxId: number, dir: 0 | 1, nodeId: string, base: bigint): void;
  /** After the mailbox closed: its completions are no longer claimed. */
  ringClose(mailboxId: number): void;
  /**
   * The sending side of direction dir (0: to next, 1: to prev): frames to peer's frame mailbox at
   * vaddr (that incarnation only), within the credits creditsMailboxId takes. Its id, or -status.
   */
  ringOutOpen(creditsMailboxId: number, dir: 0 | 1, peer: string, incarnation: bigint, vaddr: bigint): number;
  /**
   * The next frame, numbered natively, as a counted put (putId) copied now and acknowledged late:
   * 0, PUT_ROUND_DUE, RING_NO_CREDIT (nothing taken), or the refusal status (TOO_LARGE).
   */
  ringSend(outId: number, putId: number, data: Uint8Array, header: Uint8Array | undefined): number;
  /** A sequence number for a frame put from JS, its ring header written to head: 0, RING_NO_CREDIT or a status. */
  ringTake(outId: number, bytes: number, headerLen: number, head: Uint8Array): number;
  ringOutClose(outId: number): void;
}

/** What the constructor reads: the transport choice, the secret, and each provider's options under its name. */
export interface NativeEndpointOptions {
  provider: string;
  listen?: string;
  /** A provider's checked options; absent: it runs with its defaults (shm: it does not run under 'auto'). */
  groups: Record<string, object | undefined>;
  /** Present: peers must prove they know this secret. */
  authSecret?: Buffer;
}

export interface NativeAddon {
  NativeEndpoint: new (
    nodeId: string,
    progress: 0 | 1,
    onEvents: (events: Float64Array, words: number, texts: string[] | undefined) => void,
    options: NativeEndpointOptions,
  ) => NativeEndpoint;
  /** zeroed false: memory a transfer overwrites whole (it may hold earlier buffers' bytes). */
  allocBuffer(size: number, zeroed?: boolean): ArrayBuffer;
  /** The pool behind allocBuffer; a limit given is set first. */
  bufferPool(limitBytes?: number): { pooledBytes: number; limitBytes: number; reused: number; fresh: number; returned: number };
  /** The shared arena behind the pool's larger blocks; a limit given is set first. */
  arena(limitBytes?: number): { usedBytes: number; limitBytes: number; spanBytes: number };
  capabilities(): Capabilities;
  heapBytes(): number;
}

/** What compiling the addon needs (Debian and Ubuntu names); rdma-core's two are optional. */
const SYSTEM_PACKAGES = 'cmake g++ pkg-config libssl-dev (and, for verbs, libibverbs-dev librdmacm-dev)';
/** How an application compiles the addon of its rvma dependency. */
const COMPILE_HINT =
  'In an application: `npm install-scripts approve rvma`, then `npm rebuild rvma` (npm 11.19 and later run a ' +
  "dependency's install script only once approved; with older npm, `npm rebuild rvma`). In a checkout of rvma: " +
  '`npm run build:native`.';
let addon: NativeAddon | undefined;
let loadedFrom: string | undefined;

/**
 * Where the addon may be, in order: RVMA_ADDON alone when set; else a local build, then the
 * prebuilt addons shipped in the package (with rdma-core first; the other loads without it).
 */
function candidates(): string[] {
  if (process.env.RVMA_ADDON) return [path.resolve(process.env.RVMA_ADDON)];
  // src/native.ts runs from the package root's src/ (tests) or dist/src/ (built).
  const roots = [path.join(__dirname, '..'), path.join(__dirname, '..', '..')];
  const prebuilds = path.join('prebuilds', `${process.platform}-${process.arch}`);
  const relative = [path.join('build', 'Release', 'rvma.node'), path.join(prebuilds, 'rvma-verbs.node'), path.join(prebuilds, 'rvma.node')];
  return relative.flatMap((file) => roots.map((root) => path.join(root, file)));
}

/** The addon, loaded on first use. Throws ERR_RVMA_NATIVE_UNAVAILABLE with the fix. */
export function native(): NativeAddon {
  if (addon) return addon;
  const tried = candidates();
  const present = tried.filter((file) => fs.existsSync(file));
  if (!present.length) {
    throw new RvmaError(
      'ERR_RVMA_NATIVE_UNAVAILABLE',
      `the rvma native addon is not built, and no prebuilt one ships for ${process.platform}-${process.arch} ` +
        `(looked for ${tried.join(', ')}). ${COMPILE_HINT} Compiling needs the system packages ${SYSTEM_PACKAGES}.`,
    );
  }
  const failures: string[] = [];
  let firstCause: unknown;
  for (const file of present) {
    try {
      addon = require(file) as NativeAddon;
      loadedFrom = file;
      return addon;
    } catch (cause) {
      firstCause ??= cause;
      failures.push(`${file}: ${(cause as Error).message}`);
    }
  }
  throw new RvmaError(
    'ERR_RVMA_NATIVE_UNAVAILABLE',
    `the rvma native addon failed to load (${failures.join('; ')}). ` +
      `Compile one for this machine. ${COMPILE_HINT} Compiling needs the system packages ${SYSTEM_PACKAGES}.`,
    { cause: firstCause },
  );
}

/** The file the addon was loaded from (loading it if needed). */
export function addonPath(): string {
  native();
  return loadedFrom!;
}
