// The ring over verbs: the data-path suite the loopback ring runs (test/helpers/ring-suite.ts),
// with every member a verbs endpoint of this process listening on rxe0, found through the
// process directory. Frames up to the eager size travel as WRITE_WITH_IMM; the 40 KB frames
// are read by the receiver (RDMA READ). Runs inside the Soft-RoCE guest only.
import { Endpoint } from '../../src';
import { trackRings } from '../helpers/ring';
import { ringSuite } from '../helpers/ring-suite';
import { RDMA_ADDR, describeInGuest } from '../helpers/verbs';

describeInGuest('ring over verbs', () => {
  jest.setTimeout(120_000);
  const rings = trackRings((progress, nodeId) => Endpoint.create({ nodeId, progress, provider: 'verbs', listen: `rdma://${RDMA_ADDR}:0` }));
  ringSuite('a ring of verbs endpoints', rings, { frames: 2_000, longTestMs: 180_000 });
});
