// A ring member (src/ring) found through the soak's Redis: rank 0 sends numbered frames around
// and checks that each comes back once, in order, byte for byte; the other ranks forward and
// check the order they see. When the generation fails (a member killed, stopped too long, or
// gone from the directory), the member re-forms the ring; if that fails, it joins afresh, and if
// that fails too, it asks the harness for a restart.
import { Endpoint, RedisDirectory, Ring } from '../../src';
import { fill, mix } from '../rng';
import { codeOf, config, endpointOptions, failure, heartbeat, isStopping, onStop, report, sleep, startRole, within } from './common';

const WAIT_MS = 10_000;
const REFORM_MS = 20_000;
const HEADER = 8;

const stats: Record<string, number> = { framesChecked: 0, framesForwarded: 0, reforms: 0, joins: 0, orderViolations: 0, byteMismatches: 0, waitTimeouts: 0 };

function frameHeader(gen: number, index: number): Uint8Array {
  const h = Buffer.alloc(HEADER);
  h.writeUInt32LE(index, 0);
  h.writeUInt32LE(gen, 4);
  return h;
}

function frameData(gen: number, index: number, maxBytes: number): Uint8Array {
  const len = 64 + (mix(gen, index, 0x51) % Math.max(1, maxBytes - 64));
  const out = new Uint8Array(len);
  fill(out, 0, len, mix(gen, index));
  return out;
}

class Member {
  ring!: Ring;
  /** Frames sent and taken in the current generation. */
  sent = 0;
  taken = 0;

  constructor(
    private readonly endpoint: Endpoint,
    private readonly r: NonNullable<typeof config.ring>,
  ) {}

  private get maxData(): number {
    return this.r.frameBytes - HEADER;
  }

  async join(): Promise<void> {
    this.ring = await Ring.join(this.endpoint, { group: this.r.group, size: this.r.size, timeout: REFORM_MS, frameBytes: this.r.frameBytes });
    stats.joins++;
  }

  /** Runs the current generation until it fails; returns the error. */
  async run(): Promise<unknown> {
    try {
      if (this.ring.rank === 0) await this.source(this.ring.generation);
      else await this.forward(this.ring.generation);
      return undefined;
    } catch (error) {
      return error;
    }
  }

  /** Sends frames at the configured rate, at most `window` around the ring, and checks each that comes back. */
  private async source(gen: number): Promise<void> {
    const { ring } = this;
    let sent = 0;
    let expected = 0;
    this.sent = this.taken = 0;
    let tokens = 0;
    let last = Date.now();
    while (!isStopping()) {
      const now = Date.now();
      tokens = Math.min(tokens + ((now - last) / 1000) * this.r.framesPerSecond, this.r.window);
      last = now;
      while (tokens >= 1 && sent - expected < this.r.window) {
        try {
          await ring.sendNext([frameHeader(gen, sent), frameData(gen, sent, this.maxData)], { timeout: WAIT_MS });
        } catch (error) {
          // No credit in time: the frame took no place in the order; send it again.
          if (codeOf(error) === 'ERR_RVMA_TIMEOUT') {
            stats.waitTimeouts++;
            continue;
          }
          throw error;
        }
        sent++;
        this.sent++;
        tokens--;
      }
      if (sent === expected) {
        await sleep(Math.max(1, 1000 / this.r.framesPerSecond));
        continue;
      }
      let frame;
      try {
        frame = await ring.recvPrev({ timeout: WAIT_MS });
      } catch (error) {
        if (codeOf(error) === 'ERR_RVMA_TIMEOUT') {
          stats.waitTimeouts++;
          continue;
        }
        throw error;
      }
      this.taken++;
      const h = Buffer.from(frame.header);
      const index = h.length === HEADER ? h.readUInt32LE(0) : -1;
      const frameGen = h.length === HEADER ? h.readUInt32LE(4) : -1;
      if (index !== expected || frame.seq !== expected || frameGen !== gen) {
        stats.orderViolations++;
        report({
          type: 'violation',
          check: 'ring-order',
          detail: `${config.role}: generation ${gen} expected frame ${expected}, got index ${index} (generation ${frameGen}) with seq ${frame.seq}`,
        });
      } else if (!Buffer.from(frame.data).equals(frameData(gen, index, this.maxData))) {
        stats.byteMismatches++;
        report({ type: 'violation', check: 'ring-bytes', detail: `${config.role}: generation ${gen} frame ${index} differs from what was sent` });
      }
      frame.release();
      expected = index >= expected ? index + 1 : expected + 1;
      stats.framesChecked++;
    }
  }

  /** Forwards each frame to the next rank, checking that sequence numbers only go up by one. */
  private async forward(gen: number): Promise<void> {
    const { ring } = this;
    let expected = 0;
    this.sent = this.taken = 0;
    while (!isStopping()) {
      let frame;
      try {
        frame = await ring.recvPrev({ timeout: WAIT_MS });
      } catch (error) {
        if (codeOf(error) === 'ERR_RVMA_TIMEOUT') {
          stats.waitTimeouts++;
          continue;
        }
        throw error;
      }
      this.taken++;
      if (frame.seq !== expected) {
        stats.orderViolations++;
        report({ type: 'violation', check: 'ring-order', detail: `${config.role}: generation ${gen} forwarded seq ${frame.seq} where ${expected} was next` });
      }
      expected = frame.seq + 1;
      for (;;) {
        try {
          await ring.sendNext([frame.header, frame.data], { timeout: WAIT_MS });
          break;
        } catch (error) {
          if (codeOf(error) !== 'ERR_RVMA_TIMEOUT') {
            frame.release();
            throw error;
          }
          stats.waitTimeouts++;
        }
      }
      frame.release();
      this.sent++;
      stats.framesForwarded++;
    }
  }

  /** After a failed generation: re-form, else join afresh; false if neither worked. */
  async recover(): Promise<boolean> {
    try {
      await this.ring.reform({ size: this.r.size, timeout: REFORM_MS });
      stats.reforms++;
      return true;
    } catch (error) {
      if (isStopping()) return false;
      failure('ring-reform', error, stats);
    }
    try {
      await within(this.ring.close(), WAIT_MS, 'Ring.close');
      await this.join();
      return true;
    } catch (error) {
      if (!isStopping()) failure('ring-join', error, stats);
      return false;
    }
  }
}

async function main(): Promise<void> {
  startRole();
  const r = config.ring!;
  const directory = await RedisDirectory.connect({ url: r.redisUrl, cluster: r.cluster, connectTimeoutMs: 10_000 });
  const endpoint = await Endpoint.create({ ...endpointOptions(config.transport === 'tcp' ? 'tcp' : 'auto'), directory });
  endpoint.on('registrationLost', (info: { reason: string }) => {
    if (isStopping()) return;
    report({ type: 'restartMe', reason: `its directory registration was lost (${info.reason})` });
    setTimeout(() => process.exit(3), 50);
  });
  report({ type: 'ready', nodeId: endpoint.nodeId, incarnationId: endpoint.incarnation });
  const member = new Member(endpoint, r);
  // Where the member stands, for a hang finding: its generation, rank, and the frames it sent
  // and took in that generation.
  const where = (): Record<string, number> => {
    const ring = member.ring;
    if (!ring || ring.closed || ring.failure) return { generation: -1 };
    try {
      return { generation: ring.generation, rank: ring.rank, sentInGeneration: member.sent, takenInGeneration: member.taken };
    } catch {
      return { generation: -1 }; // being formed
    }
  };
  heartbeat(() => stats.framesChecked + stats.framesForwarded + stats.reforms + stats.joins, () => ({ ...stats, ...where() }));
  onStop(async () => {
    await within(member.ring?.close() ?? Promise.resolve(), WAIT_MS, 'Ring.close').catch(() => undefined);
    await endpoint.close();
    await directory.close();
  });

  for (let attempt = 0; ; attempt++) {
    try {
      await member.join();
      break;
    } catch (error) {
      if (isStopping()) return;
      failure('ring-join', error, stats);
      if (attempt >= 2) {
        report({ type: 'restartMe', reason: 'it could not join the ring' });
        setTimeout(() => process.exit(3), 50);
        return;
      }
    }
  }
  while (!isStopping()) {
    const error = await member.run();
    if (isStopping()) break;
    failure('ring', error ?? new Error('a ring loop ended without an error'), stats);
    if (!(await member.recover())) {
      if (isStopping()) break;
      report({ type: 'restartMe', reason: 'it could neither re-form nor join the ring' });
      setTimeout(() => process.exit(3), 50);
      return;
    }
  }
}

void main();
