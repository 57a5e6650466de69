// `rvma info`: what this build contains and what this machine offers, as text or JSON.
import * as os from 'node:os';
import { Endpoint } from '../mailbox';
import { type Capabilities } from '../mailbox/endpoint-options';
import { addonPath } from '../native';
import { type Memlock, formatBytes, readMemlock } from './memlock';
import { packageVersion } from './package-root';
import { type ProviderProbe, probeProviders } from './probe';

export interface Info {
  rvma: { version: string; addon: string; protocols: Capabilities['protocols'] };
  node: { version: string; napi: string; platform: string; arch: string };
  host: { cpus: number; model?: string; kernel: string };
  providers: ProviderProbe[];
  rdma: { rdmaCore: boolean; devices: Capabilities['devices'] };
  memlock: Memlock;
  cma: boolean;
}

export async function gatherInfo(): Promise<Info> {
  const caps = Endpoint.capabilities;
  const cpus = os.cpus();
  return {
    rvma: { version: packageVersion(), addon: addonPath(), protocols: caps.protocols },
    node: { version: process.version, napi: process.versions.napi ?? 'unknown', platform: process.platform, arch: process.arch },
    host: { cpus: cpus.length, model: cpus[0]?.model, kernel: `${os.type()} ${os.release()}` },
    providers: await probeProviders(),
    rdma: { rdmaCore: caps.rdmaCore, devices: caps.devices },
    memlock: readMemlock(),
    cma: caps.cma,
  };
}

export function formatInfo(info: Info): string {
  const limit = (bytes: number | null | undefined): string => (bytes === null ? 'unlimited' : bytes === undefined ? 'unknown' : formatBytes(bytes));
  const lines = [
    `rvma ${info.rvma.version}, addon ${info.rvma.addon}`,
    `protocols: tcp ${info.rvma.protocols.tcp}, shm ${info.rvma.protocols.shm}, verbs ${info.rvma.protocols.verbs}`,
    `node ${info.node.version} (N-API ${info.node.napi}) on ${info.node.platform}-${info.node.arch}, ${info.host.kernel}, ` +
      `${info.host.cpus} CPUs${info.host.model ? ` (${info.host.model})` : ''}`,
    '',
    'providers:',
    ...info.providers.map((p) => `  ${p.name.padEnd(9)} ${p.usable ? 'usable    ' : p.built ? 'unusable  ' : 'not built '} ${p.detail}`),
    '',
    `rdma-core: ${info.rdma.rdmaCore ? 'linked' : 'not linked (built without libibverbs-dev and librdmacm-dev)'}`,
  ];
  if (info.rdma.rdmaCore && !info.rdma.devices.length) lines.push('RDMA devices: none');
  for (const d of info.rdma.devices) {
    const about = [d.firmware ? `firmware ${d.firmware}` : '', d.maxMrBytes ? `largest region ${formatBytes(d.maxMrBytes)}` : ''].filter(Boolean);
    lines.push(`RDMA device ${d.name}: ${d.activePorts} active port(s)${about.length ? `, ${about.join(', ')}` : ''}`);
    for (const p of d.ports) {
      lines.push(`  port ${p.port}: ${p.state}, ${p.linkLayer}, MTU ${p.activeMtu}${p.linkLayer === 'InfiniBand' ? `, LID ${p.lid}` : ''}`);
      for (const g of p.gids) lines.push(`    GID[${g.index}] ${g.gid} ${g.type}`);
    }
  }
  lines.push(
    '',
    `locked memory: soft ${limit(info.memlock.soft)}, hard ${limit(info.memlock.hard)}; registrable: ${info.memlock.registrable}`,
    `cross-memory reads (process_vm_readv, for shm): ${info.cma ? 'permitted' : 'refused here (a seccomp filter?): shm copies large puts through its ring'}`,
  );
  return lines.join('\n');
}
