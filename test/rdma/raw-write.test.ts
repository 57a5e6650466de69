// Raw one-sided writes over verbs: RDMA_WRITE straight into a region the peer lent, then a
// notice that raises the owner's region.next(). Runs inside the Soft-RoCE guest only.
import { type Endpoint, type ProgressMode } from '../../src';
import { PROGRESS_MODES, trackEndpoints } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';
import { rawWriteSuite } from '../helpers/raw-write-suite';
import { describeInGuest, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();

async function pair(progress: ProgressMode): Promise<{ owner: Endpoint; writer: Endpoint }> {
  const owner = await verbsEndpoint(endpoints, progress);
  const writer = await verbsEndpoint(endpoints, progress);
  return { owner, writer };
}

describeInGuest('verbs raw writes', () => {
  jest.setTimeout(180_000);

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    rawWriteSuite(pair, progress);
  });

  test('connect to an address where nothing listens fails with ERR_RVMA_NO_PEER', async () => {
    const { writer } = await pair('loop');
    const closed = await verbsEndpoint(endpoints, 'loop');
    const address = closed.address;
    await closed.close();
    await expectRejects(writer.connect(address, { timeout: 30_000 }), 'ERR_RVMA_NO_PEER');
  });
});
