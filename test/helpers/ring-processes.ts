// Rings of real processes (test/fixtures/ring-member.js), members found through a private Redis:
// starting a member, and a whole ring whose ranks every member agrees on.
import { type Child, type ChildTracker } from './children';
import { uniqueNodeId } from './endpoints';
import { TEST_CONNECT_TIMEOUT_MS } from './redis';
import { type Transport } from './transports';

export interface RingMember {
  child: Child;
  nodeId: string;
}

export interface MemberSetup {
  children: ChildTracker;
  redisUrl: string;
  transport: Transport;
  progress: 'loop' | 'thread';
  /** The member's directory lease; the directory's default when undefined. */
  leaseMs?: number;
}

/** A member process with its endpoint, registered in the directory under `cluster`. */
export async function startMember(s: MemberSetup, cluster: string, label: string): Promise<RingMember> {
  const endpoint = { nodeId: uniqueNodeId(label), listen: s.transport.listen(label), progress: s.progress, ...s.transport.options };
  const redis = { url: s.redisUrl, cluster, ttlMs: s.leaseMs, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS };
  const child = s.children.spawn(label, 'ring-member.js', [JSON.stringify({ endpoint, redis })]);
  const ready = await child.next('ready', 30_000);
  return { child, nodeId: ready.nodeId as string };
}

/** `size` members joined into one ring (`join`: more Ring.join options); members by rank. */
export async function ringOfProcesses(s: MemberSetup, size: number, join: object = {}): Promise<{ members: RingMember[]; byRank: RingMember[]; group: string }> {
  const group = uniqueNodeId('ring');
  const members = await Promise.all([...Array(size).keys()].map((i) => startMember(s, group, `${group}-m${i}`)));
  const joined = await Promise.all(members.map((m) => m.child.request({ cmd: 'join', options: { group, size, timeout: 20_000, ...join } }, 30_000)));
  const byRank: RingMember[] = [];
  joined.forEach((j, i) => (byRank[j.rank as number] = members[i]));
  expect(joined.map((j) => j.members)).toEqual(joined.map(() => byRank.map((m) => m.nodeId)));
  return { members, byRank, group };
}

/**
 * The survivors of a ring of `size` re-form it, in their order, with `newcomer` joining for the
 * free rank; returns what each said (survivors first).
 */
export async function reformWithNewcomer(survivors: RingMember[], newcomer: RingMember, group: string, size: number): Promise<Record<string, unknown>[]> {
  return Promise.all([
    ...survivors.map((m) => m.child.request({ cmd: 'reform', options: { size, timeout: 20_000 } }, 30_000)),
    newcomer.child.request({ cmd: 'join', options: { group, size, timeout: 20_000 } }, 30_000),
  ]);
}

/** `count` frames of `frameBytes` from ring[0] around to it again in direction next; the sink's report. */
export async function aroundOnce(ring: RingMember[], count: number, frameBytes: number): Promise<Record<string, unknown>> {
  const timeout = 30_000;
  const forwarding = ring.slice(1).map((m) => m.child.request({ cmd: 'forward', dir: 'next', count, timeout }, 60_000));
  const sink = ring[0].child.request({ cmd: 'sink', dir: 'next', count, size: frameBytes, timeout }, 60_000);
  await ring[0].child.request({ cmd: 'source', dir: 'next', count, size: frameBytes, timeout }, 60_000);
  await Promise.all(forwarding);
  return sink;
}
