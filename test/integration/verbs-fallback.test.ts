// Provider 'auto' with an rdma:// listen address on a machine where verbs cannot run (no RDMA
// device with an ACTIVE port, or no rdma-core in the build): the endpoint runs tcp at the same
// host and port and says why, where provider 'verbs' fails. With an active device (the
// Soft-RoCE guest's suite covers that case) this file only reports a skip.
import { Endpoint } from '../../src';
import { VADDR, trackEndpoints } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';

const endpoints = trackEndpoints();
const WAIT = { timeout: 10_000 };
const verbsUsable = Endpoint.capabilities.devices.some((d) => d.activePorts > 0);

(verbsUsable ? describe.skip : describe)('provider auto where verbs cannot run', () => {
  test('listens on tcp:// at the rdma:// host and port, says why, and carries puts', async () => {
    const receiver = await endpoints.create({ provider: 'auto', listen: 'rdma://127.0.0.1:0' });
    expect(receiver.address).toMatch(/^tcp:\/\/127\.0\.0\.1:[1-9]\d*$/);
    expect(receiver.verbsFallback).toMatch(/verbs is unavailable \(.*(RDMA device|no verbs provider).*\): using tcp/);
    expect(receiver.registrationStats()).toBeUndefined();
    expect((await receiver.directory.resolveNode(receiver.nodeId))?.addresses).toEqual({ tcp: receiver.address, shm: receiver.addresses.shm });
    expect(receiver.addresses.shm).toMatch(/^shm:\/\/rvma-/);

    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(5);
    const sender = await endpoints.create({ provider: 'tcp' });
    await sender.put(receiver.nodeId, VADDR, Buffer.from('hello'), WAIT);
    const done = await mailbox.next(WAIT);
    expect(Buffer.from(done.buffer).toString()).toBe('hello');
  });

  test('an explicit port is kept', async () => {
    const probe = await endpoints.create({ provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
    const port = Number(probe.address.split(':').pop());
    await probe.close();
    const endpoint = await endpoints.create({ provider: 'auto', listen: `rdma://127.0.0.1:${port}` });
    expect(endpoint.address).toBe(`tcp://127.0.0.1:${port}`);
  });

  test("provider 'verbs' fails instead, and endpoints without rdma:// listen have no fallback to report", async () => {
    await expectRejects(Endpoint.create({ provider: 'verbs', listen: 'rdma://127.0.0.1:0' }), 'ERR_RVMA_INVALID_ARGUMENT');
    const plain = await endpoints.create({ provider: 'auto', listen: 'tcp://127.0.0.1:0' });
    expect(plain.verbsFallback).toBeUndefined();
  });
});
