// One rank of bench:ring's baseline: the LEAP-style net.Socket ring of support/, with
// bench:ring's frame sizes, as the origin's link.
import type { Directory } from '../../src/directory';
import { NetRing } from '../../support/net-ring';
import { FRAME_BYTES, HEADER_BYTES } from './config';
import { type OriginLink } from './origin';

export type { NetFrame } from '../../support/net-ring';

export function joinNetRing(directory: Directory, group: string, rank: number, size: number): Promise<NetRing & OriginLink> {
  return NetRing.join(directory, group, rank, size, { headerBytes: HEADER_BYTES, frameBytes: FRAME_BYTES });
}
