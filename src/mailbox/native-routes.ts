// The native side's index for each destination (peer and incarnation): puts name a destination
// by it, so a put converts no node id string and allocates nothing native for it.
import type { NativeEndpoint } from '../native';
import type { Route } from './resolver';

export class NativeRoutes {
  /** Native route index by peer, then by incarnation. */
  private readonly byPeer = new Map<string, Map<bigint | undefined, number>>();
  /** The last route asked for (the resolver hands out one object per route): its index again. */
  private lastRoute: Route | undefined;
  private lastIndex = 0;

  constructor(private readonly handle: NativeEndpoint) {}

  indexOf(route: Route): number {
    if (route === this.lastRoute) return this.lastIndex;
    this.lastRoute = route;
    return (this.lastIndex = this.lookUp(route));
  }

  private lookUp(route: Route): number {
    let byIncarnation = this.byPeer.get(route.peer);
    if (!byIncarnation) this.byPeer.set(route.peer, (byIncarnation = new Map()));
    let index = byIncarnation.get(route.incarnation);
    if (index === undefined) {
      index = this.handle.route(route.peer, route.incarnation);
      byIncarnation.set(route.incarnation, index);
    }
    return index;
  }
}
