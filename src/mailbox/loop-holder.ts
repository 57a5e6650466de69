// Keeps the process alive while something waits on an endpoint: from the first wait to the end
// of the turn in which the last one ended, its native wake-up is referenced and the endpoint
// itself kept reachable (its promises must settle even if the application dropped it).
import type { NativeEndpoint } from '../native';

// The endpoints something waits on. Idle ones may be collected (the native side then closes).
const busy = new Set<object>();

export class LoopHolder {
  private waiters = 0;
  private held = false;
  private releaseDue = false;

  constructor(
    private readonly owner: object,
    private readonly handle: Pick<NativeEndpoint, 'ref' | 'unref'>,
    private readonly isClosed: () => boolean,
  ) {}

  /**
   * A wait began (1) or ended (-1). When the last wait ends, the hold is let go at the end of
   * the turn, not at once: the next put or next() usually follows within the same turn, and
   * letting go and taking hold again on every operation would cost two native calls each time.
   */
  readonly waiting = (delta: 1 | -1): void => {
    this.waiters += delta;
    if (this.isClosed()) return;
    if (this.waiters > 0) {
      if (this.held) return;
      this.held = true;
      busy.add(this.owner);
      this.handle.ref();
    } else if (!this.releaseDue) {
      // Released at the end of this turn if nothing waits by then: a loop that waits again at
      // once (the usual case) keeps the hold without a native call per wait. Not by a timer: a
      // timer, even one cleared, wakes a sleeping process when it falls due (a pipeline rank
      // waiting for each frame was woken every 20 ms by one).
      this.releaseDue = true;
      setImmediate(this.releaseIfIdle);
    }
  };

  /** The endpoint closed (its native side holds nothing any more): nothing keeps it reachable. */
  endpointClosed(): void {
    busy.delete(this.owner);
  }

  private readonly releaseIfIdle = (): void => {
    this.releaseDue = false;
    if (this.waiters > 0 || !this.held || this.isClosed()) return;
    this.held = false;
    busy.delete(this.owner);
    this.handle.unref();
  };
}
