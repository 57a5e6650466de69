// What `Endpoint.capabilities` and `rvma info` report of a real RDMA device: rxe0 in the
// Soft-RoCE guest, its port, MTU and GIDs, and the verbs provider probed with a real put.
import { Endpoint } from '../../src';
import { rvma } from '../helpers/cli';
import { RDMA_ADDR, describeInGuest } from '../helpers/verbs';

/** The RoCEv2 GID of an IPv4 address: ::ffff:a.b.c.d. */
function ipv4Gid(ip: string): string {
  const hex = ip.split('.').map((n) => Number(n).toString(16).padStart(2, '0'));
  return `0000:0000:0000:0000:0000:ffff:${hex[0]}${hex[1]}:${hex[2]}${hex[3]}`;
}

describeInGuest('rvma info on rxe0', () => {
  jest.setTimeout(60_000);

  test('capabilities describe rxe0: an ACTIVE Ethernet port with the RoCEv2 GID of its address', () => {
    const device = Endpoint.capabilities.devices.find((d) => d.name === 'rxe0');
    expect(device).toBeDefined();
    expect(device!.activePorts).toBe(1);
    expect(device!.maxMrBytes).toBeGreaterThan(0);
    const [port] = device!.ports;
    expect(port).toMatchObject({ port: 1, state: 'ACTIVE', linkLayer: 'Ethernet' });
    expect(port.activeMtu).toBeGreaterThanOrEqual(1024);
    expect(port.gids).toContainEqual(expect.objectContaining({ gid: ipv4Gid(RDMA_ADDR), type: 'RoCEv2' }));
  });

  test('rvma info --json finds verbs usable with a put over rxe0', async () => {
    const result = await rvma(['info', '--json']);
    expect(result.status).toBe(0);
    const verbs = JSON.parse(result.stdout).providers.find((p: { name: string }) => p.name === 'verbs');
    expect(verbs).toEqual({ name: 'verbs', built: true, usable: true, detail: `a put over rxe0 at ${RDMA_ADDR}` });
  });
});
