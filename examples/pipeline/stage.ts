// What every rank of the pipeline holds: its layer range with the ORT sessions and KV caches,
// the data path to its neighbours, and, on the rvma ring, the ring itself and the KV mailbox
// that re-splits move caches through; and how it applies the control records.
import { type Endpoint, type LayerRange, type Mailbox, type Ring, type RingControlMessage } from '../../src';
import { type Move, startMove } from './kv-move';
import { type ModelConfig } from './model/config';
import { LayerRunner } from './model/runtime';
import { type Pipe } from './pipe';
import { type PipelineBody, rangeLayers } from './protocol';
import { DecodeSwitches } from './switches';

/** The rvma ring's parts: what re-splits, recovery and control records need. */
export interface Control {
  endpoint: Endpoint;
  ring: Ring;
  kvMailbox: Mailbox;
}

export class Stage {
  /** Layer compute of decode frames (one token in flight), since the last report. */
  computeUs = 0;
  computeFrames = 0;
  private move: Move | undefined;

  constructor(
    readonly cfg: ModelConfig,
    readonly modelDir: string,
    readonly pipe: Pipe,
    readonly control: Control | undefined,
    public runner: LayerRunner,
    public ranges: LayerRange[],
  ) {}

  private get ring(): Ring {
    if (!this.control) throw new Error('this ring carries no control records');
    return this.control.ring;
  }

  /** This rank's context switches per decoded token. */
  readonly switches = new DecodeSwitches();

  /** Runs this rank's layers on one token's hidden state (timed: a decode step). */
  async run(hidden: Float32Array, timed: boolean): Promise<Float32Array> {
    if (timed) this.switches.step();
    const began = performance.now();
    const out = await this.runner.run(hidden, 1);
    if (timed) {
      this.computeUs += (performance.now() - began) * 1000;
      this.computeFrames++;
    }
    return out;
  }

  /** Starts a re-split (the head calls it for itself; the others on RESIZE_CHAIN). */
  beginMove(to: LayerRange[]): Move {
    const { endpoint, kvMailbox } = this.control!;
    this.move = startMove(this.cfg, endpoint, kvMailbox, this.runner, this.ring.members, this.ring.rank, this.ranges, to);
    this.ranges = to;
    return this.move;
  }

  /** Loads a new range with empty caches (after a recovery: the conversation is fed again). */
  async reload(ranges: LayerRange[]): Promise<void> {
    await this.runner.close();
    this.runner = await LayerRunner.create(this.cfg, this.modelDir, rangeLayers(ranges[this.ring.rank]));
    this.ranges = ranges;
  }

  /** A non-head rank applies a control record, then passes it on. */
  async apply(m: RingControlMessage): Promise<void> {
    const { record } = m;
    if (record.type === 'RESIZE_CHAIN') {
      this.beginMove(record.ranges);
    } else if (record.type === 'CONTROL') {
      const body = record.body as PipelineBody;
      if (body.kind === 'moved') await this.move?.installed;
      else if (body.kind === 'reload') await this.reload(body.ranges);
      else if (body.kind === 'report') {
        await this.ring.sendControl({ type: 'CONTROL', body: { kind: 'compute', totalUs: this.computeUs, frames: this.computeFrames } }, { to: 0 });
        this.computeUs = this.computeFrames = 0;
      }
    }
    await m.pass();
  }
}
