// What the pipeline example's processes say to each other: the launcher's IPC messages, the
// 8-byte activation header that travels with each frame (LEAP's {pos, flags}), and the
// application records sent with ring.around().
import type { LayerRange } from '../../src';
import type { ModelConfig } from './model/config';
import type { SwitchesPerToken } from './switches';

export interface WorkerConfig {
  /** 0 for the head (embeds, samples, runs the first layers). */
  index: number;
  workers: number;
  model: ModelConfig;
  prompt: number[];
  newTokens: number;
  /** Decode steps after which the head re-splits the layers, and after which a worker is killed. */
  resplitAt: number | undefined;
  killAt: number | undefined;
  redisUrl: string;
  cluster: string;
  group: string;
  listen: string;
  progress: 'loop' | 'thread';
  /** The rvma Ring, or the LEAP-style net.Socket ring it is compared with. */
  ring: 'rvma' | 'net';
}

/** 'killed': the worker the head asked to kill is gone (so the next token meets the loss). */
export type ToWorker = { type: 'start'; config: WorkerConfig } | { type: 'killed' } | { type: 'stop' };

/** How the layer split looked from a decode step on. */
export interface SplitChange {
  step: number;
  ranges: LayerRange[];
  why: string;
}

export interface HeadReport {
  tokens: number[];
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  /** Decode round trip minus the layer compute of every rank, per hop (rvma ring only). */
  hopLatencyUs: number | undefined;
  splits: SplitChange[];
  recoveryMs: number | undefined;
}

export type FromWorker =
  | { type: 'ready'; index: number; nodeId: string }
  /** The head asks the launcher to kill a worker (the recovery demonstration). */
  | { type: 'kill'; nodeId: string }
  | { type: 'report'; report: HeadReport }
  /** As it stops: its context switches per decoded token (undefined: fewer than 2 decode steps). */
  | { type: 'switches'; index: number; perToken: SwitchesPerToken | undefined }
  | { type: 'failed'; message: string };

// Frame header flags, as LEAP has them.
export const FLAG_NO_REPLY = 0; // prefill: the tail drops its output
export const FLAG_NEED_REPLY = 1; // the tail's output goes back to the head

export function activationHeader(pos: number, flags: number): Uint8Array {
  const h = new Uint8Array(8);
  const v = new DataView(h.buffer);
  v.setUint32(0, pos, true);
  v.setUint32(4, flags, true);
  return h;
}

export function readActivationHeader(h: Uint8Array): { pos: number; flags: number } {
  if (h.byteLength !== 8) throw new Error(`activation header of ${h.byteLength} bytes, expected 8`);
  const v = new DataView(h.buffer, h.byteOffset, 8);
  return { pos: v.getUint32(0, true), flags: v.getUint32(4, true) };
}

/**
 * CONTROL bodies. 'moved': sent around after a RESIZE_CHAIN, each rank passes it once the
 * layers it takes over are installed with their KV caches. 'reload': after a recovery, every
 * rank loads its new range with empty caches (the lost rank's caches are gone: the head
 * feeds the conversation again). 'report': each rank answers the head with a 'compute'
 * record, its layer compute time on decode frames (for the per-hop latency).
 */
export type PipelineBody =
  | { kind: 'moved' }
  | { kind: 'reload'; ranges: LayerRange[] }
  | { kind: 'report' }
  | { kind: 'compute'; totalUs: number; frames: number };

/** Contiguous ranges of `layers` layers over `ranks` ranks, the first ones one larger. */
export function evenSplit(layers: number, ranks: number): LayerRange[] {
  const base = Math.floor(layers / ranks);
  const extra = layers % ranks;
  const out: LayerRange[] = [];
  for (let r = 0, start = 0; r < ranks; r++) {
    const end = start + base + (r < extra ? 1 : 0);
    out.push({ start, end });
    start = end;
  }
  return out;
}

export function rangeLayers(r: LayerRange): number[] {
  return Array.from({ length: r.end - r.start }, (_, i) => r.start + i);
}
