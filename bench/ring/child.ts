// Child-process entry of bench:ring: one rank of an rvma or net.Socket ring, served over the
// common IPC protocol. Rank 0 is its 'sender' (it runs the scenarios); ranks 1 and 2 are its
// 'receivers' (they forward from the start; prepare/finish count what they forwarded).
//   node child.js sender|receiver '<rank spec json>' redis://127.0.0.1:PORT
import { RedisDirectory } from '../../src';
import { type Role, serveChild } from '../common/child';
import { type Variant } from '../common/protocol';
import { Tally } from '../common/tally';
import { RANKS } from './config';
import { joinNetRing } from './net-ring';
import { Origin, type OriginLink } from './origin';
import { RvmaRank } from './rvma-rank';
import { work } from './work';

/** A ring's variant, with the group and rank of one of its processes. */
export interface RankSpec extends Variant {
  group: string;
  cluster: string;
  rank: number;
}

interface Rank {
  link: OriginLink;
  /** Starts forwarding (ranks 1 and 2): calls `tally` per frame or record passed on. */
  forward(tally: Tally): void;
  /** µs of work on each frame before it is passed on, from the next frame on. */
  setWork(us: number): void;
  close(): Promise<void>;
}

async function netRank(spec: RankSpec, url: string): Promise<Rank> {
  const directory = await RedisDirectory.connect({ url, namespace: spec.cluster });
  const ring = await joinNetRing(directory, spec.group, spec.rank, RANKS);
  let workUs = 0;
  return {
    link: ring,
    setWork: (us) => (workUs = us),
    forward(tally) {
      ring.onError = (error) => tally.fail(error);
      ring.onFrame = (frame) => {
        work(workUs);
        ring.forward(frame);
        tally.add(frame.bytes.length);
      };
    },
    async close() {
      await ring.close();
      await directory.close();
    },
  };
}

async function rvmaRank(spec: RankSpec, url: string): Promise<Rank> {
  const { provider, progress, shm, group, cluster, rank } = spec;
  const r = await RvmaRank.join({ provider: provider ?? 'tcp', progress: progress ?? 'loop', shm, url, cluster, group, rank });
  return {
    link: r,
    setWork: (us) => (r.workUs = us),
    forward(tally) {
      const failed = (error: unknown): void => tally.fail(error);
      void r.forwardFrames((bytes) => tally.add(bytes), failed);
      void r.passControl(() => tally.add(0), failed);
    },
    close: () => r.close(),
  };
}

serveChild(async (role, variant, url): Promise<Role> => {
  const spec = variant as RankSpec;
  const rank = await (spec.transport === 'net' ? netRank(spec, url!) : rvmaRank(spec, url!));
  if (role === 'sender') {
    const origin = new Origin(rank.link);
    return { address: url!, run: (s) => origin.run(s), close: () => rank.close() };
  }
  const tally = new Tally();
  rank.forward(tally);
  return {
    address: url!,
    prepare: (s) => {
      tally.reset();
      rank.setWork(s.workUs ?? 0);
      return {};
    },
    finish: (expected) => tally.finish(expected),
    close: () => rank.close(),
  };
});
