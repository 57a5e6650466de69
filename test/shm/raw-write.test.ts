// Raw writes over shm, with the suite every raw-write transport passes: one-sided
// (process_vm_writev into the region the owner lent) and, with CMA off, placed by the owner.
import { Endpoint, type ProgressMode } from '../../src';
import { PROGRESS_MODES, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { rawWriteSuite } from '../helpers/raw-write-suite';

const endpoints = trackEndpoints();

describe.each([
  ['one-sided', true],
  ['placed by the owner (cma off)', false],
])('shm raw writes, %s', (_, cma) => {
  jest.setTimeout(60_000);
  const create = (progress: ProgressMode): Promise<Endpoint> =>
    endpoints.create({ provider: 'shm', listen: `shm://${uniqueNodeId('raw')}`, progress, shm: { cma } });
  async function pair(progress: ProgressMode): Promise<{ owner: Endpoint; writer: Endpoint }> {
    const owner = await create(progress);
    const writer = await create(progress);
    expect(await writer.connect(owner.address, { timeout: 10_000 })).toBe(owner.nodeId);
    // In-process peers may read each other whenever the process may use CMA at all.
    const pulled = cma && Endpoint.capabilities.cma;
    expect(writer.peers()).toEqual([{ nodeId: owner.nodeId, provider: 'shm', detail: pulled ? 'cma' : 'copy' }]);
    return { owner, writer };
  }

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    rawWriteSuite(pair, progress);
  });
});
