// The progress bar of `rvma bench` (cli-progress): one bar per run of the benchmark's repetition
// loop, showing the repetition, the scenario and the row being measured. The benchmark's own
// lines print above it. Without a terminal there is no bar, only the lines.
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import type { Progress } from './progress';

const FORMAT = '{bar} {value}/{total} | repetition {repetition}/{repetitions} | {scenario} | {row}';

export class ProgressBar {
  private bars: MultiBar | undefined;
  private bar: SingleBar | undefined;

  constructor(private readonly enabled: boolean) {}

  /** A line of the benchmark's output. */
  line(text: string, stream: NodeJS.WriteStream = process.stdout): void {
    if (this.bar) this.bars!.log(`${text}\n`);
    else stream.write(`${text}\n`);
  }

  update(p: Progress): void {
    if (!this.enabled) return;
    const payload = { repetition: p.repetition, repetitions: p.repetitions, scenario: p.scenario, row: p.row };
    if (p.done === 0 && this.bar) this.finish();
    if (!this.bar) {
      this.bars ??= new MultiBar({ format: FORMAT, hideCursor: true, clearOnComplete: true, stream: process.stdout }, Presets.shades_classic);
      this.bar = this.bars.create(p.total, p.done, payload);
    }
    this.bar.update(p.done, payload);
    if (p.done >= p.total) this.finish();
  }

  /** Removes the bar (a run of the loop ended, or the benchmark did). */
  finish(): void {
    if (!this.bar) return;
    this.bars!.remove(this.bar);
    this.bar = undefined;
    this.bars!.stop();
    this.bars = undefined;
  }
}
