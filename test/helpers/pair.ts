// The two Soft-RoCE guests of scripts/rdma-vm/pair.sh (`npm run test:rdma:pair`): the suites in
// test/pair run in the first guest and start processes in the second through its remote-exec
// server; the wire between the guests drops and reorders frames on request.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import * as path from 'node:path';
import { pollFor } from './redis';

const EXEC = process.env.RVMA_PAIR_EXEC;
const WIRE = process.env.RVMA_PAIR_WIRE;
/** The second guest's address (its rxe0 sits on it). */
export const PEER_ADDR = process.env.RVMA_PAIR_PEER ?? '10.77.0.2';

/** The command prefix that runs a program in the second guest (see test/pair/remote-exec.js). */
export const IN_PEER: string[] = [process.execPath, path.join(__dirname, '..', 'pair', 'remote-exec.js'), EXEC ?? ''];

/** Runs body as a describe block in the first guest of a pair; elsewhere reports one skipped test. */
export function describePair(name: string, body: () => void): void {
  if (EXEC && WIRE) {
    describe(name, () => {
      // The second guest boots with this one, and again after a test halted it.
      beforeEach(() => peerServing(180_000), 190_000);
      body();
    });
  } else {
    describe(`${name} (skipped: runs in the first of two Soft-RoCE guests, \`npm run test:rdma:pair\`)`, () => {
      test.skip('needs RVMA_PAIR_EXEC and RVMA_PAIR_WIRE (scripts/rdma-vm/pair.sh)', () => undefined);
    });
  }
}

/** Whether the second guest's remote-exec server takes a connection now (one try, 2 s at most). */
function peerServes(): Promise<boolean> {
  const [host, port] = EXEC!.split(':');
  return new Promise<boolean>((resolve) => {
    const s = connect(Number(port), host, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    // A guest that is still booting may not answer at all.
    s.setTimeout(2000, () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** Waits until the second guest, which boots alongside this one, serves remote-exec. */
const peerServing = (timeoutMs: number): Promise<boolean> => pollFor(`the second guest serving remote-exec at ${EXEC}`, peerServes, timeoutMs, 500);

export interface WireStats {
  forwarded: number;
  dropped: number;
  reordered: number;
  control: { loss: number; reorder: number };
}

export function wireStats(): WireStats {
  return JSON.parse(readFileSync(path.join(WIRE!, 'stats'), 'utf8')) as WireStats;
}

/** Sets the wire's loss and reordering (percent of frames, each way) and waits until it applies them. */
export async function setWire(control: { loss?: number; reorder?: number }): Promise<void> {
  const want = { loss: control.loss ?? 0, reorder: control.reorder ?? 0 };
  const file = path.join(WIRE!, 'control');
  writeFileSync(`${file}.tmp`, JSON.stringify(want));
  renameSync(`${file}.tmp`, file);
  await pollFor(`the wire taking ${JSON.stringify(want)}`, () => {
    const { control: now } = wireStats();
    return now.loss === want.loss && now.reorder === want.reorder;
  }, 10_000, 100);
}
