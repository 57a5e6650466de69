// A rank's context switches over the decode, per token: from its first decode step to its last,
// so that loading, prefill and shutdown are left out. Voluntary ones are its sleeps (and so its
// wake-ups); involuntary ones, times another process took its CPU.
export interface SwitchesPerToken {
  voluntary: number;
  involuntary: number;
}

export class DecodeSwitches {
  private first: NodeJS.ResourceUsage | undefined;
  private last: NodeJS.ResourceUsage | undefined;
  private steps = 0;

  /** A decode step begins. */
  step(): void {
    const now = process.resourceUsage();
    this.first ??= now;
    this.last = now;
    this.steps++;
  }

  perToken(): SwitchesPerToken | undefined {
    if (!this.first || !this.last || this.steps < 2) return undefined;
    const n = this.steps - 1;
    return {
      voluntary: (this.last.voluntaryContextSwitches - this.first.voluntaryContextSwitches) / n,
      involuntary: (this.last.involuntaryContextSwitches - this.first.involuntaryContextSwitches) / n,
    };
  }
}
