// What the host suites share: a describe that runs only under `npm run test:hosts` (root, ip and
// nft needed), a Redis on one host of the bed, and agents (test/fixtures/agent.js) started
// inside a host.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { findRedisServer, freePort } from '../../support/private-redis';
import { type Agent, type AgentOptions, type ChildTracker, startAgent } from '../helpers/children';
import { type Bed, type Host, bedUnavailable, startBed } from './bed';

/**
 * Runs body with a bed of `count` hosts made before and removed after. Only under
 * `npm run test:hosts` (RVMA_HOSTS=1); elsewhere one skipped test says how to run it. There,
 * a machine that cannot run the bed fails with the reason.
 */
export function describeHosts(name: string, count: number, body: (bed: () => Bed) => void): void {
  if (!process.env.RVMA_HOSTS) {
    describe(`${name} (skipped: runs under \`npm run test:hosts\`, as root)`, () => {
      test.skip('needs RVMA_HOSTS=1, root, ip and nft', () => undefined);
    });
    return;
  }
  describe(name, () => {
    let bed: Bed | undefined;
    beforeAll(() => {
      const why = bedUnavailable();
      if (why) throw new Error(why);
      bed = startBed(count);
    });
    afterAll(() => bed?.stop());
    body(() => bed!);
  });
}

/** An agent (an Endpoint in a child process) inside `host`. */
export function agentOn(children: ChildTracker, bed: Bed, host: Host, label: string, options: AgentOptions): Promise<Agent> {
  return startAgent(children, `${label}@h${host.index}`, options, bed.prefix(host));
}

export interface BedRedis {
  url: string;
  host: Host;
  stop(): Promise<void>;
}

/**
 * A redis-server inside `host`, on its bed address: reachable from the bed's hosts only (so
 * protected mode, which accepts loopback clients alone, is off).
 */
export async function redisOn(bed: Bed, host: Host): Promise<BedRedis> {
  const binary = findRedisServer();
  if (!binary) throw new Error('redis-server is not installed');
  const port = await freePort();
  const child: ChildProcess = spawn(
    bed.prefix(host)[0],
    [...bed.prefix(host).slice(1), binary, '--port', String(port), '--bind', host.address, '--protected-mode', 'no', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    child.kill('SIGKILL');
    await exited;
  };
  const cli = [...bed.prefix(host), binary.replace(/redis-server$/, 'redis-cli'), '-h', host.address, '-p', String(port), 'ping'];
  for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    try {
      if (execFileSync(cli[0], cli.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() === 'PONG') {
        return { url: `redis://${host.address}:${port}`, host, stop };
      }
    } catch {
      // not up yet
    }
  }
  await stop();
  throw new Error(`redis-server did not start in ${host.netns}`);
}
