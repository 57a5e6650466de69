// Turns a put target (node id, task label, tcp:// or rdma:// address, bound name) into what
// the native side routes on, through the directory, with a cache keyed by the node's incarnation.
import { hostname } from 'node:os';
import type { Directory, NodeRecord } from '../directory/directory';
import { hostIdentity } from './host-identity';

/** Where a put goes: a native peer string and, when known, the incarnation it must reach. */
export interface Route {
  peer: string;
  incarnation?: bigint;
}

/** Which of a record's ways in this endpoint can use. */
export interface RoutePolicy {
  /** In-process peers are reached by node id (the loopback provider: not with provider 'tcp' or 'verbs'). */
  loopback: boolean;
  /** The endpoint runs the verbs provider, so a published rdma:// address is used. */
  rdma: boolean;
  /** The endpoint runs the shm provider, so a same-host peer's shm:// address is used. */
  shm: boolean;
}

const host = hostname();

export class Resolver {
  private readonly cache = new Map<string, Route>();
  /** The last target routed from the cache: a run of puts to one node skips the Map. */
  private lastTarget: string | undefined;
  private lastRoute: Route | undefined;

  constructor(
    private readonly directory: Directory,
    private readonly policy: RoutePolicy,
  ) {}

  /** A route now when it is known, else a promise of one. Unknown nodes pass through as-is. */
  route(target: string): Route | Promise<Route> {
    if (target === this.lastTarget) return this.lastRoute!;
    const cached = this.cache.get(target);
    if (cached) {
      this.lastTarget = target;
      this.lastRoute = cached;
      return cached;
    }
    if (target.startsWith('tcp://') || target.startsWith('rdma://') || target.startsWith('shm://')) {
      const direct = { peer: target };
      this.cache.set(target, direct);
      return direct;
    }
    const lookup = target.startsWith('/job:') ? this.directory.resolveLabel(target) : this.directory.resolveNode(target);
    return lookup.then((record) => {
      if (!record) return { peer: target };
      const route = routeOf(record, this.policy);
      this.cache.set(target, route);
      if (target === this.lastTarget) this.lastTarget = this.lastRoute = undefined;
      return route;
    });
  }

  /**
   * A node this endpoint connected to (Endpoint.connect): puts to its id go over that
   * connection without asking the directory, until one fails with PEER_LOST or NO_PEER.
   */
  learn(nodeId: string): void {
    if (!this.cache.has(nodeId)) this.cache.set(nodeId, { peer: nodeId });
  }

  /** The node behind target restarted or vanished: the next put resolves afresh. */
  forget(target: string): void {
    this.cache.delete(target);
    this.lastTarget = this.lastRoute = undefined;
  }
}

export function routeOf(record: NodeRecord, policy: RoutePolicy): Route {
  const incarnation = BigInt(`0x${record.incarnation}`);
  const { rdma, tcp, shm } = record.addresses;
  // In this process the loopback provider reaches it by node id; on this host, shared memory;
  // elsewhere, its network address.
  if (policy.loopback && record.pid === process.pid && record.host === host) return { peer: record.nodeId, incarnation };
  const here = hostIdentity();
  if (policy.shm && shm && here !== undefined && record.hostId === here) return { peer: shm, incarnation };
  return { peer: (policy.rdma && rdma) || tcp || record.nodeId, incarnation };
}
