// What the harness and its child processes say to each other over the fork IPC channel. Each
// role reports as it goes (so what a killed process reported before it died still counts) and
// takes a few commands: directory records, the rendezvous session, stop.
import type { NodeRecord } from '../src/directory';

export type RoleKind = 'sink' | 'sender' | 'producer' | 'consumer' | 'ring';
export type Transport = 'tcp' | 'shm';
export type Progress = 'loop' | 'thread';

export interface SenderTarget {
  sink: number;
  sinkRole: string;
  transport: Transport;
  /** A tcp:// address (direct or through a proxy) for tcp, the sink's node id for shm. */
  target: string;
  proxied: boolean;
}

/** argv[2] of every role process, as JSON. */
export interface RoleConfig {
  role: string;
  kind: RoleKind;
  /** The role's number: senders and sinks write it into records. */
  index: number;
  /** 0 for the first process of the role, +1 per restart. */
  incarnation: number;
  nodeId: string;
  progress: Progress;
  transport: Transport;
  /** The tcp port this role's endpoint listens on (the same for every incarnation). */
  port: number;
  seed: number;
  /** Epoch ms after which the process exits by itself, whatever happens. */
  deadline: number;
  sender?: { ratePerTarget: number; window: number; putTimeoutMs: number; targets: SenderTarget[] };
  rendezvous?: { pair: number; producerTask: string; consumerTask: string; tensors: number; stepsPerSecond: number; recvTimeoutMs: number };
  ring?: { group: string; size: number; redisUrl: string; cluster: string; framesPerSecond: number; window: number; frameBytes: number };
}

export interface Tally {
  [key: string]: number;
}

export type FromRole =
  /** The endpoint is up; record: what its directory registered (memory-directory roles). */
  | { type: 'ready'; nodeId: string; incarnationId: string; record?: NodeRecord }
  /** Every second: a counter that moves while the role gets work done, and role stats. */
  | { type: 'beat'; progress: number; stats: Tally }
  /** Sender: puts to this sink will use sequence numbers up to upTo (said before any is issued). */
  | { type: 'reserve'; sink: number; upTo: number }
  /** Sender: outcomes since the last report; issued: every seq up to it was handed to put(). */
  | { type: 'outcomes'; sink: number; issued: number; ok: [number, number][]; failed: [number, string][] }
  /** Sink: records taken from retired buffers since the last report, as runs per stream. */
  | { type: 'arrivals'; streams: { sender: number; incarnation: number; runs: [number, number][] }[] }
  /** A typed failure a workload saw (counted by code). */
  | { type: 'failure'; area: string; code: string; count?: number }
  /** An invariant a role checks itself was broken (epoch counts, frame order, bytes). */
  | { type: 'violation'; check: string; detail: string }
  /** Rendezvous: this session cannot go on (a typed failure); asks for a new one. */
  | { type: 'stuck'; session: number; code: string }
  /** The role cannot go on in this process (ring recovery failed, lease lost): restart it. */
  | { type: 'restartMe'; reason: string }
  | { type: 'stopped'; stats: Tally }
  /** Answer to 'gc': the JavaScript heap in use (and external memory) right after a full collection, bytes. */
  | { type: 'heap'; id: number; heapUsed: number; external: number }
  | { type: 'fatal'; message: string };

export type ToRole =
  | { type: 'peers'; records: NodeRecord[] }
  | { type: 'session'; id: number }
  /** Collect garbage now and say what is left (to tell retained objects from a lazy collector). */
  | { type: 'gc'; id: number }
  | { type: 'stop' };

/** Put outcomes after which the put may or may not have been placed (docs/api.md, put). */
export const AMBIGUOUS_CODES = new Set(['ERR_RVMA_TIMEOUT', 'ERR_RVMA_ABORTED', 'ERR_RVMA_PEER_LOST', 'ERR_RVMA_AMBIGUOUS', 'ERR_RVMA_CLOSED']);

/** The hostile process: one attack at a time, answered when it is over. */
export interface AttackCommand {
  type: 'attack';
  id: number;
  kind: import('./hostile').AttackKind;
  victim: import('./hostile').Victim;
  durationMs: number;
}

export type FromHostile =
  | { type: 'ready' }
  | { type: 'attackDone'; id: number; result?: import('./hostile').AttackResult; error?: string }
  | { type: 'fatal'; message: string };
