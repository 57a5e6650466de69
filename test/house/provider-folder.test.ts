// A provider is its folder plus its line in native/providers/provider_kinds.cpp: the lane
// provider of test/provider/lane, built into its own addon, runs under Endpoint.create like any
// other, and the standard build neither lists nor accepts it. Also: the option groups every
// provider reads through the one native table are checked there (unknown keys, wrong types).
import { execFile, execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Endpoint } from '../../src';
import { native } from '../../src/native';

const ROOT = path.join(__dirname, '..', '..');
const LANE_ADDON = path.join(ROOT, 'build-lane', 'Release', 'rvma.node');
// The sanitizer suite preloads ASan into every child, the compiler included: this build is
// checked by the plain suite.
const sanitized = process.env.RVMA_SANITIZED === '1';

describe('a provider is a folder', () => {
  (sanitized ? test.skip : test)(
    'the lane provider, built in by one table line, carries puts between endpoints that name it',
    async () => {
      execFileSync('npx', ['cmake-js', 'compile', '--out', 'build-lane', '--CDRVMA_TEST_PROVIDER=ON'], {
        cwd: ROOT,
        stdio: 'ignore',
        timeout: 600_000,
      });
      const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'test', 'fixtures', 'lane-provider.js')], {
        env: { ...process.env, RVMA_ADDON: LANE_ADDON },
        timeout: 60_000,
      });
      const report = JSON.parse(stdout.trim());
      expect(report.providers).toEqual(expect.arrayContaining(['loopback', 'tcp', 'shm', 'lane']));
      expect(Object.keys(report.protocols)).not.toContain('lane'); // it speaks no wire
      expect(report.bytes).toBe(1 << 20);
      expect(report.received).toBe(report.sent);
      expect(report.senderPeers).toEqual([{ nodeId: 'lane-receiver', provider: 'lane', detail: 'carried 2' }]);
      expect(report.toOutsider).toBe('ERR_RVMA_PEER_LOST'); // a known node that no provider of the sender reaches
      expect(report.outsiderPeers).toEqual([]);
    },
    700_000,
  );

  test('the standard build neither lists nor accepts it', async () => {
    expect(Endpoint.capabilities.providers).not.toContain('lane');
    await expect(Endpoint.create({ provider: 'lane' as never })).rejects.toMatchObject({
      code: 'ERR_RVMA_INVALID_ARGUMENT',
      message: expect.stringContaining('provider must be one of'),
    });
  });

  test.each([
    ['auto', { tcp: { stripez: 2 } }, 'unknown option tcp.stripez'],
    ['auto', { tcp: { stripes: '2' } }, 'tcp.stripes must be a number'],
    ['auto', { shm: { cma: 1 } }, 'shm.cma must be a boolean'],
    ['verbs', { verbs: { slots: true } }, 'verbs.slots must be a number'],
  ])('a provider reads its own group natively: %s %j', (provider, groups, message) => {
    const create = () => new (native().NativeEndpoint)('groups-check', 0, () => undefined, { provider, groups });
    expect(create).toThrow(message);
  });
});
