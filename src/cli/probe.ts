// Whether a provider works here, found by doing what a user would: two endpoints on it, one
// put between them, the bytes checked. Each probe is bounded and cleans up after itself.
import { Endpoint, type EndpointOptions } from '../mailbox';
import { type RdmaDevice } from '../mailbox/endpoint-options';

export interface ProviderProbe {
  name: string;
  built: boolean;
  usable: boolean;
  /** What was tried, or why the provider cannot be used. */
  detail: string;
}

const PROBE_TIMEOUT_MS = 3000;
const PROBE_VADDR = 0x10000n;
const PAYLOAD = Buffer.from('rvma-probe');

async function putBetween(receiverOptions: EndpointOptions, senderOptions: EndpointOptions): Promise<void> {
  const id = `rvma-info-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const receiver = await Endpoint.create({ nodeId: `${id}-receiver`, ...receiverOptions });
  try {
    const sender = await Endpoint.create({ nodeId: `${id}-sender`, ...senderOptions });
    try {
      const mailbox = receiver.openMailbox(PROBE_VADDR);
      mailbox.post(PAYLOAD.length);
      await sender.put(receiver.nodeId, PROBE_VADDR, PAYLOAD, { timeout: PROBE_TIMEOUT_MS });
      const done = await mailbox.next({ timeout: PROBE_TIMEOUT_MS });
      if (!Buffer.from(done.buffer).equals(PAYLOAD)) throw new Error('the probe put arrived with other bytes');
    } finally {
      await sender.close();
    }
  } finally {
    await receiver.close();
  }
}

/** rdma_cm listens on an IP address: the one a RoCE port's IPv4-mapped GID names, if any. */
export function roceIpv4(devices: RdmaDevice[]): string | undefined {
  for (const device of devices) {
    for (const port of device.ports) {
      if (port.state !== 'ACTIVE') continue;
      const mapped = port.gids.find((g) => g.gid.startsWith('0000:0000:0000:0000:0000:ffff:'));
      if (!mapped) continue;
      const hex = mapped.gid.slice(30).replace(':', '');
      return [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.');
    }
  }
  return undefined;
}

async function attempt(name: string, built: boolean, run: () => Promise<string>, notBuilt = 'not in this build'): Promise<ProviderProbe> {
  if (!built) return { name, built, usable: false, detail: notBuilt };
  try {
    return { name, built, usable: true, detail: await run() };
  } catch (error) {
    return { name, built, usable: false, detail: (error as Error).message };
  }
}

export async function probeProviders(): Promise<ProviderProbe[]> {
  const caps = Endpoint.capabilities;
  const built = (name: string): boolean => caps.providers.includes(name);
  const probes = [
    await attempt('loopback', built('loopback'), async () => {
      await putBetween({ provider: 'loopback' }, { provider: 'loopback' });
      return 'a put between two endpoints of this process';
    }),
    await attempt('tcp', built('tcp'), async () => {
      await putBetween({ provider: 'tcp', listen: 'tcp://127.0.0.1:0' }, { provider: 'tcp' });
      return 'a put over 127.0.0.1';
    }),
    await attempt('shm', built('shm'), async () => {
      await putBetween({ provider: 'shm' }, { provider: 'shm' });
      return `a put through a shared ring; large puts: ${caps.cma ? 'pulled with process_vm_readv (CMA)' : 'copied through the ring (CMA refused)'}`;
    }),
  ];
  probes.push(
    await attempt('verbs', built('verbs'), async () => {
      const active = caps.devices.filter((d) => d.activePorts > 0);
      if (!active.length) {
        throw new Error(caps.devices.length ? 'no RDMA device has an ACTIVE port' : 'no RDMA device (rdma-core finds none)');
      }
      const ip = roceIpv4(caps.devices);
      if (!ip) {
        await (await Endpoint.create({ provider: 'verbs' })).close();
        return `an endpoint opened on ${active[0].name} (no RoCE IPv4 address to probe a put with)`;
      }
      await putBetween({ provider: 'verbs', listen: `rdma://${ip}:0` }, { provider: 'verbs', listen: `rdma://${ip}:0` });
      return `a put over ${active.map((d) => d.name).join(', ')} at ${ip}`;
    }, 'not in this build: the addon was compiled without rdma-core (libibverbs-dev, librdmacm-dev)'),
  );
  return probes;
}
