// Who is in a ring, from the endpoint's directory alone. A generation `gen` of group G is a set
// of names: `rvma.ring/G/gen/size` (its size), `rvma.ring/G/gen/rank/R` (bound by the member of
// rank R, to the base vaddr of its ring mailboxes) and, per member, `rvma.ring/G/member/NODE`
// (bound to gen + 1: how a newcomer finds the current generation). A rank is claimed by binding
// its name, which the directory gives to one live node only. A member that sees its generation
// fail binds `rvma.ring/G/gen/failed`, so that newcomers wait for the next one.
import type { Directory } from '../directory/directory';
import { RvmaError } from '../base/errors';

export interface Member {
  rank: number;
  nodeId: string;
  incarnation: string;
  /** Base vaddr of its ring mailboxes (control, frames from prev, frames from next, credits). */
  base: bigint;
}

export interface Membership {
  gen: number;
  size: number;
  rank: number;
  members: Member[];
}

export interface ClaimOptions {
  group: string;
  nodeId: string;
  base: bigint;
  /** The generation to join; undefined: the group's current one. */
  gen?: number;
  rank?: number;
  /** The size asked for: a generation of another size is an error. */
  size?: number;
  /** The size given to a generation that has none yet, when `size` is not asked for. */
  defaultSize?: number;
  /** Ranks to try first, in order (reform keeps survivors in their old order). */
  preferRank?: number;
  deadline: number;
  signal?: AbortSignal;
}

const names = {
  size: (group: string, gen: number) => `rvma.ring/${group}/${gen}/size`,
  rank: (group: string, gen: number, rank: number) => `rvma.ring/${group}/${gen}/rank/${rank}`,
  member: (group: string, nodeId: string) => `rvma.ring/${group}/member/${nodeId}`,
  failed: (group: string, gen: number) => `rvma.ring/${group}/${gen}/failed`,
};

/** Poll period while a ring fills: short first (a launcher starts members together), then 50 ms. */
const pollMs = (attempt: number): number => Math.min(2 + attempt * 4, 50);

function timeout(group: string, what: string, ms: number): RvmaError {
  return new RvmaError('ERR_RVMA_TIMEOUT', `Ring.join of group "${group}" timed out after ${ms} ms ${what}`);
}

export class MembershipClaim {
  private readonly held: string[] = [];

  constructor(private readonly directory: Directory) {}

  /** Claims a rank (binding its name) and waits until every rank of the generation is bound. */
  async claim(o: ClaimOptions, started: number): Promise<Membership> {
    for (let attempt = 0; ; attempt++) {
      const gen = o.gen ?? (await this.currentGen(o.group));
      if (o.gen === undefined && (await this.directory.resolveName(names.failed(o.group, gen)))) {
        await this.pause(o, attempt, started, `waiting for the members of failed generation ${gen} to form a new one`);
        continue;
      }
      const size = await this.sizeOf(o, gen);
      if (size !== undefined) {
        const rank = await this.claimRank(o, gen, size);
        if (rank !== undefined) {
          await this.directory.bindName(names.member(o.group, o.nodeId), BigInt(gen + 1));
          const members = await this.complete(o, gen, size, started);
          return { gen, size, rank, members };
        }
      }
      await this.pause(o, attempt, started, size === undefined ? 'waiting for a member that gives the size' : 'waiting for a free rank');
    }
  }

  /** Gives back every name this claim bound (leaving a generation). */
  async release(): Promise<void> {
    const held = this.held.splice(0);
    await Promise.all(held.map((name) => this.directory.unbindName(name).catch(() => undefined)));
  }

  /** The newest generation any live member of the group announces (0 for a new group). */
  private async currentGen(group: string): Promise<number> {
    const nodes = await this.directory.list();
    const gens = await Promise.all(nodes.map((n) => this.directory.resolveName(names.member(group, n.nodeId))));
    let gen = 0;
    for (const b of gens) if (b && b.vaddr >= 1n && b.vaddr - 1n > BigInt(gen)) gen = Number(b.vaddr - 1n);
    return gen;
  }

  private async sizeOf(o: ClaimOptions, gen: number): Promise<number | undefined> {
    const name = names.size(o.group, gen);
    let bound = await this.directory.resolveName(name);
    const give = o.size ?? o.defaultSize;
    if (!bound && give !== undefined) {
      try {
        await this.bind(name, BigInt(give));
        return give;
      } catch (error) {
        if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_DIRECTORY_CONFLICT')) throw error;
        bound = await this.directory.resolveName(name); // another member gave it first
      }
    }
    if (!bound) return undefined;
    const size = Number(bound.vaddr);
    if (o.size !== undefined && o.size !== size) {
      throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `Ring.join: group "${o.group}" has ${size} ranks, not ${o.size}`);
    }
    return size;
  }

  /** The rank bound for this node, or undefined when every rank it may take is held. */
  private async claimRank(o: ClaimOptions, gen: number, size: number): Promise<number | undefined> {
    if (o.rank !== undefined && o.rank >= size) {
      throw new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `Ring.join: rank ${o.rank} is outside group "${o.group}" of ${size} ranks`);
    }
    // In a re-formed generation the low ranks are the survivors' (reform: their old order), so a
    // newcomer takes the highest free rank: however the claims interleave, it never takes a
    // survivor's place (unless more newcomers come than there are free ranks).
    const free = gen > 0 ? [...Array(size).keys()].reverse() : [...Array(size).keys()];
    const order = o.rank !== undefined ? [o.rank] : free;
    if (o.rank === undefined && o.preferRank !== undefined && o.preferRank < size) order.unshift(o.preferRank);
    for (const rank of order) {
      const name = names.rank(o.group, gen, rank);
      const bound = await this.directory.resolveName(name);
      if (bound?.nodeId === o.nodeId) return rank;
      if (bound) continue;
      try {
        await this.bind(name, o.base);
        return rank;
      } catch (error) {
        if (!(error instanceof RvmaError && error.code === 'ERR_RVMA_DIRECTORY_CONFLICT')) throw error;
      }
    }
    return undefined;
  }

  private async complete(o: ClaimOptions, gen: number, size: number, started: number): Promise<Member[]> {
    for (let attempt = 0; ; attempt++) {
      const bindings = await Promise.all([...Array(size).keys()].map((r) => this.directory.resolveName(names.rank(o.group, gen, r))));
      if (bindings.every((b) => b !== undefined)) {
        const members = bindings.map((b, rank) => ({ rank, nodeId: b!.nodeId, incarnation: b!.incarnation, base: b!.vaddr }));
        const ids = new Set(members.map((m) => m.nodeId));
        if (ids.size !== size) throw new RvmaError('ERR_RVMA_DIRECTORY_CONFLICT', `Ring.join: a node holds two ranks of group "${o.group}"`);
        return members;
      }
      const missing = bindings.flatMap((b, r) => (b ? [] : [r]));
      await this.pause(o, attempt, started, `waiting for rank ${missing.join(', ')} of ${size}`);
    }
  }

  private async bind(name: string, vaddr: bigint): Promise<void> {
    await this.directory.bindName(name, vaddr);
    if (!this.held.includes(name)) this.held.push(name);
  }

  private async pause(o: ClaimOptions, attempt: number, started: number, what: string): Promise<void> {
    if (o.signal?.aborted) throw new RvmaError('ERR_RVMA_ABORTED', `Ring.join of group "${o.group}" was aborted`, { cause: o.signal.reason });
    const left = o.deadline - Date.now();
    if (left <= 0) throw timeout(o.group, what, Date.now() - started);
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs(attempt), left)));
  }
}

/** Tells newcomers that generation `gen` failed (best effort: the directory may be gone too). */
export async function markFailed(directory: Directory, group: string, gen: number): Promise<void> {
  await directory.bindName(names.failed(group, gen), 1n).catch(() => undefined);
}

/** Leaves the group: newcomers no longer count this node. */
export async function leaveGroup(directory: Directory, group: string, nodeId: string): Promise<void> {
  await directory.unbindName(names.member(group, nodeId)).catch(() => undefined);
}
