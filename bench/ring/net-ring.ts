// One rank of bench:ring's baseline: the LEAP-style net.Socket ring of examples/common, with
// bench:ring's frame sizes, as the origin's link.
import type { Directory } from '../../registry';
import { NetRing } from '../../examples/common/net-ring';
import { FRAME_BYTES, HEADER_BYTES } from './config';
import { OriginLink } from './origin';

export type { NetFrame } from '../../examples/common/net-ring';

export function joinNetRing(directory: Directory, group: string, rank: number, size: number): Promise<NetRing & OriginLink> {
  return NetRing.join(directory, group, rank, size, { headerBytes: HEADER_BYTES, frameBytes: FRAME_BYTES });
}
