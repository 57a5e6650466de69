// Hosts on one machine: each "host" is a network namespace with one interface (eth0) cabled by
// a veth pair to a bridge in a namespace of its own (the switch), so no address or link of the
// bed ever appears in the machine's own namespace. Processes run inside a host with
// `ip netns exec` (prefix()). The wire can be cut at the switch port (cut/restore: the host's
// cable, `ip link set down/up`) and made lossy with nftables (loss: a random share of the
// packets into and out of the host dropped). Netem is not in this kernel, so the bed neither
// delays nor reorders packets: docs/hosts.md says what it can and cannot emulate.
//
// Names carry the pid of the process that made the bed, and a bed whose process is gone is
// removed before a new one is made (a crashed run leaves nothing behind for long).
import { execFileSync } from 'node:child_process';

/** The bed's private subnet: it exists only inside the bed's namespaces. */
export const SUBNET = '10.99.0';
const PREFIX = 'rvmabed';

export interface Host {
  index: number;
  /** The host's network namespace. */
  netns: string;
  /** Its address on the bed. */
  address: string;
}

export interface Bed {
  hosts: Host[];
  /** The command prefix that runs a program inside `host`. */
  prefix(host: Host): string[];
  /** Pulls the host's cable: its switch port goes down (packets to and from it are lost). */
  cut(host: Host): void;
  restore(host: Host): void;
  /** Drops `percent` of the packets into and out of the host (0: none). */
  loss(host: Host, percent: number): void;
  /** Packets loss() dropped at the host since it was last set. */
  dropped(host: Host): number;
  /** Kills every process still inside the bed and removes it. */
  stop(): void;
}

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function nft(netns: string, script: string): void {
  execFileSync('ip', ['netns', 'exec', netns, 'nft', '-f', '-'], { input: script, stdio: ['pipe', 'ignore', 'pipe'] });
}

/** Why the bed cannot run here, or undefined when it can. */
export function bedUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'the host bed needs root (network namespaces)';
  for (const [tool, args] of [['ip', ['-V']], ['nft', ['--version']]] as const) {
    try {
      execFileSync(tool, args, { stdio: 'ignore' });
    } catch {
      return `the host bed needs ${tool} (apt-get install -y ${tool === 'ip' ? 'iproute2' : 'nftables'})`;
    }
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeNetns(netns: string): void {
  // A namespace is gone once its last process is: kill them, then delete it.
  for (const pid of ip('netns', 'pids', netns).split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
  try {
    ip('netns', 'del', netns);
  } catch {
    // gone already
  }
}

/** Removes the namespaces of beds whose process has ended. */
export function removeStaleBeds(): void {
  for (const line of ip('netns', 'list').split('\n')) {
    const m = new RegExp(`^(${PREFIX}-(\\d+)-\\w+)`).exec(line);
    if (m && !alive(Number(m[2]))) removeNetns(m[1]);
  }
}

/** A bed of `count` hosts (at most 200), each at SUBNET.(index + 1). */
export function startBed(count = 4): Bed {
  removeStaleBeds();
  const tag = `${PREFIX}-${process.pid}`;
  const switchNs = `${tag}-sw`;
  const hosts: Host[] = [];
  const made: string[] = [];
  const stop = (): void => {
    process.off('exit', stop);
    for (const netns of made.splice(0).reverse()) removeNetns(netns);
  };
  process.once('exit', stop);
  try {
    ip('netns', 'add', switchNs);
    made.push(switchNs);
    ip('-n', switchNs, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', switchNs, 'link', 'set', 'br0', 'up');
    for (let index = 0; index < count; index++) {
      const netns = `${tag}-h${index}`;
      ip('netns', 'add', netns);
      made.push(netns);
      // Made inside the host (no name clash with anything of the machine's), its peer moved to the switch.
      ip('-n', netns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', `port${index}`, 'netns', switchNs);
      ip('-n', switchNs, 'link', 'set', `port${index}`, 'master', 'br0');
      ip('-n', switchNs, 'link', 'set', `port${index}`, 'up');
      const address = `${SUBNET}.${index + 1}`;
      ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      ip('-n', netns, 'link', 'set', 'eth0', 'up');
      ip('-n', netns, 'link', 'set', 'lo', 'up');
      hosts.push({ index, netns, address });
    }
  } catch (error) {
    stop();
    throw error;
  }
  return {
    hosts,
    prefix: (host) => ['ip', 'netns', 'exec', host.netns],
    cut: (host) => void ip('-n', switchNs, 'link', 'set', `port${host.index}`, 'down'),
    restore(host) {
      ip('-n', switchNs, 'link', 'set', `port${host.index}`, 'up');
      // Addresses that went unanswered while the cable was out are marked unreachable in the
      // hosts' neighbour tables for a while: a connect would fail at once (EHOSTUNREACH).
      for (const h of hosts) ip('-n', h.netns, 'neigh', 'flush', 'dev', 'eth0');
    },
    loss(host, percent) {
      // One table of ours per host, replaced whole: 0 leaves it empty.
      const drop = percent > 0 ? `numgen random mod 100 < ${percent} counter drop` : '';
      nft(
        host.netns,
        [
          'table inet rvmabed',
          'delete table inet rvmabed',
          'table inet rvmabed {',
          '  chain in {',
          '    type filter hook input priority 0;',
          drop ? `    iifname "eth0" ${drop}` : '',
          '  }',
          '  chain out {',
          '    type filter hook output priority 0;',
          drop ? `    oifname "eth0" ${drop}` : '',
          '  }',
          '}',
          '',
        ].join('\n'),
      );
    },
    dropped(host) {
      const rules = execFileSync('ip', ['netns', 'exec', host.netns, 'nft', 'list', 'table', 'inet', 'rvmabed'], { encoding: 'utf8' });
      return [...rules.matchAll(/counter packets (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    },
    stop,
  };
}
