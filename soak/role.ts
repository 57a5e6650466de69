// One role of the soak across its incarnations: the process running it now, what it reported
// last, and the waits the harness has on it.
import type { NodeRecord } from '../src/directory';
import type { RolePlan } from './plan';
import type { FromRole, Tally } from './protocol';
import type { ChildHandle } from './supervisor';

export type RoleState = 'starting' | 'live' | 'paused' | 'down' | 'done';

export class Role {
  incarnation = -1;
  handle: ChildHandle<FromRole> | undefined;
  state: RoleState = 'down';
  nodeId = '';
  incarnationId = '';
  record: NodeRecord | undefined;
  stats: Tally = {};
  /** Stats of every incarnation that ended, summed, plus the live one's at the end. */
  readonly totals: Tally = {};
  /** Why the current process is expected to exit: 'killed', 'stopping', 'restarted' (it asked). */
  expectExit: string | undefined;
  fatal: string | undefined;
  restartReason: string | undefined;
  private readyWaiter: (() => void) | undefined;
  private stoppedWaiter: (() => void) | undefined;

  constructor(
    readonly plan: RolePlan,
    readonly port: number,
  ) {}

  get name(): string {
    return this.plan.role;
  }

  get pid(): number | undefined {
    return this.handle?.running ? this.handle.pid : undefined;
  }

  usesMemoryDirectory(): boolean {
    return this.plan.kind !== 'ring';
  }

  whenReady(): Promise<void> {
    return new Promise((resolve) => (this.readyWaiter = resolve));
  }

  markReady(): void {
    this.readyWaiter?.();
    this.readyWaiter = undefined;
  }

  whenStopped(): Promise<void> {
    return new Promise((resolve) => (this.stoppedWaiter = resolve));
  }

  markStopped(): void {
    this.stoppedWaiter?.();
    this.stoppedWaiter = undefined;
  }

  /** Folds the ending incarnation's last stats into the totals. */
  foldStats(): void {
    for (const [k, v] of Object.entries(this.stats)) this.totals[k] = (this.totals[k] ?? 0) + v;
    this.stats = {};
  }
}
