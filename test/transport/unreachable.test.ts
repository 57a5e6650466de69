// A put to an address where nothing answers says why, as connect does: the transport's
// reason travels with the refusal.
import * as net from 'node:net';
import { trackEndpoints, uniqueNodeId, VADDR } from '../helpers/endpoints';
import { expectRejects } from '../helpers/errors';

const endpoints = trackEndpoints();

/** A loopback port nothing listens on (it was just closed). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('puts that cannot reach their target', () => {
  test('tcp: the refused connection is named', async () => {
    const sender = await endpoints.create();
    const address = `tcp://127.0.0.1:${await closedPort()}`;
    await expectRejects(sender.put(address, VADDR, Buffer.alloc(1), { timeout: 10_000 }), 'ERR_RVMA_NO_PEER', /cannot reach .*\(.*Connection refused\)/);
  });

  test('shm: nothing listens under that name', async () => {
    const sender = await endpoints.create();
    const address = `shm://${uniqueNodeId('nobody')}`;
    await expectRejects(sender.put(address, VADDR, Buffer.alloc(1), { timeout: 10_000 }), 'ERR_RVMA_NO_PEER', new RegExp(`nothing listens at ${address}`));
  });

  test('a node id no transport knows', async () => {
    const sender = await endpoints.create();
    await expectRejects(sender.put(uniqueNodeId('unknown'), VADDR, Buffer.alloc(1), { timeout: 10_000 }), 'ERR_RVMA_NO_PEER', /no provider reaches node ".*": neither a connection nor the endpoint's directory knows it\. The default directory \(MemoryDirectory\) knows only the endpoints of this process; across processes give every endpoint a shared one \(RedisDirectory\)/);
  });
});
