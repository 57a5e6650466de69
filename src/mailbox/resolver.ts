// Turns a put target (node id, task label, tcp address, bound name) into what the native
// side routes on, through the directory, with a cache keyed by the node's incarnation.
import { hostname } from 'node:os';
import type { Directory, NodeRecord } from '../../registry/directory';

/** Where a put goes: a native peer string and, when known, the incarnation it must reach. */
export interface Route {
  peer: string;
  incarnation?: bigint;
}

const host = hostname();

export class Resolver {
  private readonly cache = new Map<string, Route>();

  /** loopback: whether in-process peers are reached by node id (false with provider 'tcp'). */
  constructor(
    private readonly directory: Directory,
    private readonly loopback: boolean,
  ) {}

  /** A route now when it is known, else a promise of one. Unknown nodes pass through as-is. */
  route(target: string): Route | Promise<Route> {
    const cached = this.cache.get(target);
    if (cached) return cached;
    if (target.startsWith('tcp://')) {
      const direct = { peer: target };
      this.cache.set(target, direct);
      return direct;
    }
    const lookup = target.startsWith('/job:') ? this.directory.resolveLabel(target) : this.directory.resolveNode(target);
    return lookup.then((record) => {
      if (!record) return { peer: target };
      const route = routeOf(record, this.loopback);
      this.cache.set(target, route);
      return route;
    });
  }

  /** The node behind target restarted or vanished: the next put resolves afresh. */
  forget(target: string): void {
    this.cache.delete(target);
  }
}

export function routeOf(record: NodeRecord, loopback: boolean): Route {
  const incarnation = BigInt(`0x${record.incarnation}`);
  const local = loopback && record.pid === process.pid && record.host === host;
  // In this process the loopback provider reaches it by node id; elsewhere, its address.
  const peer = local || !record.addresses.tcp ? record.nodeId : record.addresses.tcp;
  return { peer, incarnation };
}
