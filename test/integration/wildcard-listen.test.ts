// An endpoint listening on every interface reports an address others can dial (this host's
// name and the bound port), not the wildcard; the socket's own address stays available.
import { hostname } from 'node:os';
import { VADDR, trackEndpoints } from '../helpers/endpoints';

const endpoints = trackEndpoints();
const WAIT = { timeout: 10_000 };

describe('a wildcard tcp listen', () => {
  test('address names the host and the bound port, boundAddress the wildcard, and a peer can put to address', async () => {
    const receiver = await endpoints.create({ listen: 'tcp://0.0.0.0:0' });
    const bound = /^tcp:\/\/0\.0\.0\.0:([1-9]\d*)$/.exec(receiver.boundAddress);
    expect(bound).not.toBeNull();
    expect(receiver.address).toBe(`tcp://${hostname()}:${bound![1]}`);
    expect((await receiver.directory.resolveNode(receiver.nodeId))?.addresses).toEqual({ tcp: receiver.address, shm: receiver.addresses.shm });
    expect(receiver.addresses.shm).toMatch(/^shm:\/\/rvma-/);

    const mailbox = receiver.openMailbox(VADDR);
    mailbox.post(5);
    const sender = await endpoints.create({ provider: 'tcp' });
    await sender.put(receiver.address, VADDR, Buffer.from('hello'), WAIT);
    const done = await mailbox.next(WAIT);
    expect(Buffer.from(done.buffer.subarray(0, done.bytes)).toString()).toBe('hello');
  });

  test('a specific listen address is reported as bound by both', async () => {
    const endpoint = await endpoints.create({ listen: 'tcp://127.0.0.1:0' });
    expect(endpoint.address).toMatch(/^tcp:\/\/127\.0\.0\.1:[1-9]\d*$/);
    expect(endpoint.boundAddress).toBe(endpoint.address);
    const quiet = await endpoints.create();
    expect({ address: quiet.address, boundAddress: quiet.boundAddress }).toEqual({ address: '', boundAddress: '' });
  });
});
