// The step rendezvous a manager keeps, created on first use and dropped at cleanup.
// Also the steps only peers' requests made (they go with the last of those requests) and the ones
// cleaned up lately (a late request for one is refused).
import { Rendezvous, type RendezvousHost } from './rendezvous';

const CLEANED_STEPS_KEPT = 4096;

export class Steps {
  private readonly byId = new Map<bigint, Rendezvous>();
  /**
   * Steps that only peers' requests made (find() never returned them): one goes with the last
   * request that holds it, so a peer cannot leave steps behind (it may name any step id).
   */
  private readonly peerOnly = new Set<bigint>();
  /** Recently cleaned steps: a late request for one is refused, not parked forever. */
  private readonly cleaned = new Set<bigint>();
  /**
   * The same steps in the order they came, a ring whose next slot holds the oldest: forgetting
   * it by its slot, not by the set's first entry, costs no walk over the holes deleted entries
   * leave at the set's front (1 µs a step with 4096 kept).
   */
  private readonly cleanedOrder: (bigint | undefined)[] = new Array(CLEANED_STEPS_KEPT);
  private nextCleaned = 0;

  constructor(private readonly host: RendezvousHost) {}

  /** The step's rendezvous, created if new; `byRequest`: a peer's request asks, not the application. */
  of(step: bigint, byRequest = false): Rendezvous {
    let rendezvous = this.byId.get(step);
    if (!rendezvous) {
      rendezvous = new Rendezvous(step, this.host);
      this.byId.set(step, rendezvous);
      if (byRequest) this.peerOnly.add(step);
    } else if (!byRequest) {
      this.peerOnly.delete(step); // it holds what a peer pushed: the application's to take
    }
    return rendezvous;
  }

  values(): IterableIterator<Rendezvous> {
    return this.byId.values();
  }

  get size(): number {
    return this.byId.size;
  }

  /** Remembers the step as cleaned up and forgets its rendezvous; returns it, if it had one. */
  cleanUp(step: bigint): Rendezvous | undefined {
    if (!this.cleaned.has(step)) {
      const oldest = this.cleanedOrder[this.nextCleaned];
      if (oldest !== undefined) this.cleaned.delete(oldest);
      this.cleanedOrder[this.nextCleaned] = step;
      this.nextCleaned = (this.nextCleaned + 1) % CLEANED_STEPS_KEPT;
      this.cleaned.add(step);
    }
    const rendezvous = this.byId.get(step);
    if (!rendezvous) return undefined;
    this.byId.delete(step);
    this.peerOnly.delete(step);
    return rendezvous;
  }

  wasCleaned(step: bigint): boolean {
    return this.cleaned.has(step);
  }

  /** The last request of a peer in the step is gone: a step only such requests made goes too. */
  requestsGone(step: bigint): void {
    if (this.peerOnly.delete(step)) this.byId.delete(step);
  }

  /** Aborts every step with error and forgets them all. */
  abortAll(error: Error): void {
    for (const step of [...this.byId.keys()]) this.byId.get(step)!.startAbort(error);
    this.byId.clear();
    this.peerOnly.clear();
  }
}
