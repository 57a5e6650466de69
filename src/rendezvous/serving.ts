// Sender side: the peers' requests a manager is serving, with how many each peer holds (a peer
// may make this node keep only so much for it) and how many each step holds (a step that only
// peers' requests made goes with the last of them).
import type { Received, Rendezvous } from './rendezvous';

/** A request being served: parked until the tensor is sent, or holding a clone. */
export interface Serving {
  from: string;
  stepId: bigint;
  key: string;
  rendezvous: Rendezvous;
  parked?: (error: Error | undefined, item?: Received) => void;
  clone?: Uint8Array;
  /** The tensor the request took, until it is delivered: it goes back if the receiver gives up. */
  item?: Received;
}

export class ServingTable {
  /** By request id, `from/requestIndex`. */
  private readonly byId = new Map<string, Serving>();
  /** The request id serving each (receiver node, step, key), to find a superseded one. */
  private readonly byRecv = new Map<string, string>();
  private readonly perPeer = new Map<string, number>();
  private readonly perStep = new Map<bigint, number>();

  get(id: string): Serving | undefined {
    return this.byId.get(id);
  }

  /** The request serving a receiver's recv of key in a step (one recv per key and step at a time). */
  ofRecv(from: string, stepId: bigint, key: string): string | undefined {
    return this.byRecv.get(recvOf(from, stepId, key));
  }

  /** Requests of one peer held now. */
  heldBy(peer: string): number {
    return this.perPeer.get(peer) ?? 0;
  }

  get size(): number {
    return this.byId.size;
  }

  /** Whether some request of a peer belongs to the step. */
  inStep(stepId: bigint): boolean {
    return this.perStep.has(stepId);
  }

  add(id: string, s: Serving): void {
    this.delete(id); // counted once, whatever the caller did before
    this.byId.set(id, s);
    this.byRecv.set(recvOf(s.from, s.stepId, s.key), id);
    this.perPeer.set(s.from, this.heldBy(s.from) + 1);
    this.perStep.set(s.stepId, (this.perStep.get(s.stepId) ?? 0) + 1);
  }

  /** Forgets a request; returns it, or undefined when it was not held. */
  delete(id: string): Serving | undefined {
    const s = this.byId.get(id);
    if (!s) return undefined;
    this.byId.delete(id);
    const recv = recvOf(s.from, s.stepId, s.key);
    if (this.byRecv.get(recv) === id) this.byRecv.delete(recv);
    decrement(this.perPeer, s.from);
    decrement(this.perStep, s.stepId);
    return s;
  }

  entries(): [string, Serving][] {
    return [...this.byId];
  }

  ofPeer(peer: string): [string, Serving][] {
    if (!this.perPeer.has(peer)) return [];
    return this.entries().filter(([, s]) => s.from === peer);
  }
}

function recvOf(from: string, stepId: bigint, key: string): string {
  return `${from};${stepId};${key}`;
}

function decrement<K>(counts: Map<K, number>, k: K): void {
  const n = (counts.get(k) ?? 0) - 1;
  if (n > 0) counts.set(k, n);
  else counts.delete(k);
}
