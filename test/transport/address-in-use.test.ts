// A listen address another endpoint (or any socket) holds: ERR_RVMA_ADDRESS_IN_USE, a code of its
// own, not a bad argument, so that a caller can tell it apart and pick another; the holder works on.
import * as net from 'node:net';
import { Endpoint } from '../../src';
import { VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';

const endpoints = trackEndpoints();

describe('a listen address that is taken', () => {
  test('tcp: held by another endpoint, then by a plain socket', async () => {
    const holder = await endpoints.create({ listen: 'tcp://127.0.0.1:0' });
    await expectRejects(Endpoint.create({ listen: holder.address }), 'ERR_RVMA_ADDRESS_IN_USE', /^Endpoint\.create: cannot listen on tcp:\/\/127\.0\.0\.1:\d+: Address already in use$/);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as net.AddressInfo;
      await expectRejects(Endpoint.create({ listen: `tcp://127.0.0.1:${port}` }), 'ERR_RVMA_ADDRESS_IN_USE');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    // The holder is unharmed.
    const mailbox = holder.openMailbox(VADDR);
    mailbox.post(4);
    const sender = await endpoints.create();
    await sender.put(holder.address, VADDR, Buffer.from('ok!!'));
    expect(Buffer.from((await mailbox.next({ timeout: 5000 })).buffer).toString()).toBe('ok!!');
  });

  test('shm: a name another endpoint listens under', async () => {
    const listen = `shm://${uniqueNodeId('taken')}`;
    await endpoints.create({ listen, provider: 'shm' });
    await expectRejects(Endpoint.create({ listen, provider: 'shm' }), 'ERR_RVMA_ADDRESS_IN_USE', /cannot listen on shm:\/\/.*: Address already in use/);
  });

  test('a malformed address is still a bad argument', async () => {
    await expectRejects(Endpoint.create({ listen: 'tcp://127.0.0.1:notaport' }), 'ERR_RVMA_INVALID_ARGUMENT');
  });
});
