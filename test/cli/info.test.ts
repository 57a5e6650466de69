// `rvma info`, `--help` and usage errors, run as a user would: the built command in a child process.
import { Endpoint } from '../../src';
import { rvma } from '../helpers/cli';
import { underMemlock } from '../helpers/verbs';

jest.setTimeout(90_000);

describe('rvma info', () => {
  test('--json reports this build, each provider probed with a put, and the limits', async () => {
    const result = await rvma(['info', '--json']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const info = JSON.parse(result.stdout);
    const caps = Endpoint.capabilities;
    expect(info.rvma.version).toBe(require('../../package.json').version);
    expect(info.rvma.protocols).toEqual(caps.protocols);
    expect(info.rvma.protocols.tcp).toBe(7);
    expect(info.node.version).toBe(process.version);
    const byName = Object.fromEntries(info.providers.map((p: { name: string }) => [p.name, p]));
    expect(Object.keys(byName)).toEqual(['loopback', 'tcp', 'shm', 'verbs']);
    // Loopback, tcp over 127.0.0.1 and shm work on any Linux machine this suite runs on.
    for (const name of ['loopback', 'tcp', 'shm']) expect(byName[name]).toMatchObject({ built: true, usable: true });
    expect(byName.verbs.built).toBe(caps.providers.includes('verbs'));
    // Without an ACTIVE RDMA port verbs cannot be usable, and says why.
    if (!caps.devices.some((d) => d.activePorts > 0)) {
      expect(byName.verbs.usable).toBe(false);
      expect(byName.verbs.detail).toMatch(/RDMA device|not in this build/);
    }
    expect(info.rdma).toEqual({ rdmaCore: caps.rdmaCore, devices: caps.devices });
    expect(info.cma).toBe(caps.cma);
    expect(typeof info.memlock.ipcLock).toBe('boolean');
    expect(info.memlock.registrable).toEqual(expect.any(String));
  });

  test('the text form names every provider and the locked-memory limit', async () => {
    const result = await rvma(['info']);
    expect(result.status).toBe(0);
    for (const name of ['loopback', 'tcp', 'shm', 'verbs']) expect(result.stdout).toMatch(new RegExp(`^  ${name} +(usable|unusable|not built)`, 'm'));
    expect(result.stdout).toMatch(/^locked memory: soft /m);
    expect(result.stdout).toMatch(/^protocols: tcp 7, shm \d+, verbs \d+$/m);
  });

  // Root holds CAP_IPC_LOCK, which lifts the limit: dropped here, the limit is what counts.
  const asRoot = process.getuid?.() === 0;
  (asRoot ? test : test.skip)('without CAP_IPC_LOCK the limit set with prlimit is what may be registered', async () => {
    const result = await rvma(['info', '--json'], { prefix: underMemlock(65536) });
    expect(result.status).toBe(0);
    const { memlock } = JSON.parse(result.stdout);
    expect(memlock).toMatchObject({ soft: 65536, hard: 65536, ipcLock: false });
    expect(memlock.registrable).toMatch(/^64 KiB in all/);
  });
});

describe('rvma usage', () => {
  test('--help lists every command, and every command has its own --help', async () => {
    const top = await rvma(['--help']);
    expect(top.status).toBe(0);
    for (const command of ['info', 'bench', 'plot', 'directory', 'demo']) expect(top.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    for (const args of [['info'], ['bench'], ['bench', 'tcp'], ['bench', 'ring'], ['plot'], ['directory', 'ls'], ['directory', 'watch'], ['demo']]) {
      const help = await rvma([...args, '--help']);
      expect(help.status).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: rvma ${args.join(' ')}`, 'm'));
    }
    expect((await rvma(['bench', 'tcp', '--help'])).stdout).toMatch(/--reps <n>[\s\S]*--no-rate[\s\S]*--out <dir>/);
    // The ids each suite's id options take, from the suite itself.
    expect((await rvma(['bench', 'tcp', '--help'])).stdout).toMatch(/^  --scenarios: rtt8, bw64k, bw1m, bw16m$/m);
    expect((await rvma(['bench', 'ring', '--help'])).stdout).toMatch(/^  --transports: c-tcp, net, rvma-tcp, rvma-shm, /m);
    expect((await rvma(['bench', 'rendezvous', '--help'])).stdout).toMatch(/^  --scenarios: \S+/m);
  });

  test('unknown commands, options and values are usage errors: one line, status 2', async () => {
    const cases: [string[], RegExp][] = [
      [['nonsense'], /unknown command 'nonsense'/],
      [['bench', 'tcp', '--bogus'], /unknown option '--bogus'/],
      [['bench', 'udp'], /unknown command 'udp'/],
      [['demo', 'chess'], /value 'chess' is invalid for argument 'name'/],
      [['directory', 'ls', '--connect-timeout', 'soon'], /needs a positive integer/],
    ];
    for (const [args, message] of cases) {
      const result = await rvma(args);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
  });

  test('a failing command prints the typed error and exits 1', async () => {
    const result = await rvma(['directory', 'ls', '--redis', 'redis://127.0.0.1:1', '--connect-timeout', '500']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^rvma directory ls: ERR_RVMA_DIRECTORY_UNAVAILABLE: RedisDirectory.connect: cannot reach Redis at redis:\/\/127.0.0.1:1/);
    const plot = await rvma(['plot', '/nonexistent/results.json']);
    expect(plot.status).toBe(1);
    expect(plot.stderr).toMatch(/^rvma plot: .*\/nonexistent\/results.json/);
  });
});
