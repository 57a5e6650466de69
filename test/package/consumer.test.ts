// The package as its users get it: `npm pack`, the tarball installed into a new application,
// a strict TypeScript file compiled against the shipped declarations (skipLibCheck false), and
// the quick start run from CommonJS and from an ES module. The addon is the one this checkout
// built (RVMA_ADDON): installing with scripts would compile it again. Then the rvma command
// from the installed package: info, a small tcp benchmark with its plots, a directory listing.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { RedisDirectory } from '../../registry';
import { nodeRecord } from '../helpers/directory';
import { findRedisServer, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'consumer');
// The sanitizer run (npm run test:asan) names its own build.
const ADDON = process.env.RVMA_ADDON ?? path.join(ROOT, 'build', 'Release', 'rvma.node');
const EXPECTED = 'epoch 1: 11 bytes, "hello world"\nERR_RVMA_NO_MAILBOX\n';

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** As run(), without blocking the event loop (the test's own Redis client must keep its lease). */
async function runAsync(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await promisify(execFile)(command, args, { cwd, env, encoding: 'utf8', timeout: 120_000 });
  return stdout;
}

describe('the packed package in a new application', () => {
  jest.setTimeout(240_000);
  let app: string;

  beforeAll(() => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-consumer-'));
    // dist/ is built by `npm test` before jest; --ignore-scripts packs it as it is.
    const packed = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], ROOT)) as { filename: string }[];
    app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', path.join(work, packed[0].filename)], app);
    for (const file of fs.readdirSync(FIXTURES)) fs.copyFileSync(path.join(FIXTURES, file), path.join(app, file));
  });

  afterAll(() => {
    if (app) fs.rmSync(path.dirname(app), { recursive: true, force: true });
  });

  test('ships what it needs: compiled code, declarations, the native sources to build from; no tests', () => {
    const pkg = path.join(app, 'node_modules', 'rvma');
    const shipped = ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/registry/index.d.ts', 'CMakeLists.txt', 'native/engine.cpp', 'LICENSE'];
    // The rvma command runs the benchmarks (with their C baselines) and the demos.
    shipped.push('dist/src/cli/main.js', 'dist/bench/tcp/run.js', 'bench/c/sockbench.c', 'dist/examples/demo/launcher.js');
    // The README's links to docs/ resolve inside the installed package.
    shipped.push('README.md', 'docs/api.md', 'docs/cli.md', 'docs/security.md', 'docs/plots/tcp-bandwidth.svg');
    for (const file of shipped) expect(fs.existsSync(path.join(pkg, file))).toBe(true);
    for (const file of ['test', 'bench/tcp', 'dist/test', 'src']) expect(fs.existsSync(path.join(pkg, file))).toBe(false);
  });

  test('a strict TypeScript file compiles against the shipped declarations (skipLibCheck false) and runs', () => {
    const tsconfig = {
      compilerOptions: {
        target: 'ES2022',
        module: 'commonjs',
        strict: true,
        skipLibCheck: false,
        outDir: 'out',
        types: ['node'],
        typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      },
      files: ['quickstart.ts'],
    };
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    expect(run(process.execPath, [tsc, '-p', 'tsconfig.json'], app)).toBe('');
    expect(run(process.execPath, ['out/quickstart.js'], app, { ...process.env, RVMA_ADDON: ADDON })).toBe(EXPECTED);
  });

  test('the quick start runs from an ES module with named imports', () => {
    expect(run(process.execPath, ['quickstart.mjs'], app, { ...process.env, RVMA_ADDON: ADDON })).toBe(EXPECTED);
  });

  describe('a prebuilt addon in the package', () => {
    // The addon this checkout built stands in for the one scripts/prebuild.sh makes (the same
    // Release build of these sources): what is tested is how the package finds and loads it.
    const RELEASE = path.join(ROOT, 'build', 'Release', 'rvma.node');
    const pkg = (): string => path.join(app, 'node_modules', 'rvma');
    const prebuilds = (): string => path.join(pkg(), 'prebuilds', `${process.platform}-${process.arch}`);
    const withoutAddonOverride = (): NodeJS.ProcessEnv => {
      const env = { ...process.env };
      delete env.RVMA_ADDON;
      return env;
    };
    const install = (): { status: number | null; stderr: string } => {
      const result = spawnSync(process.execPath, [path.join(pkg(), 'scripts', 'install.js')], { cwd: pkg(), encoding: 'utf8', timeout: 60_000 });
      return { status: result.status, stderr: result.stderr };
    };
    afterEach(() => fs.rmSync(path.join(pkg(), 'prebuilds'), { recursive: true, force: true }));

    test('the install step uses it instead of compiling, and the library loads it', () => {
      fs.mkdirSync(prebuilds(), { recursive: true });
      fs.copyFileSync(RELEASE, path.join(prebuilds(), 'rvma-verbs.node'));
      const result = install();
      expect(result).toEqual({ status: 0, stderr: `rvma: using the prebuilt addon prebuilds/${process.platform}-${process.arch}/rvma-verbs.node\n` });
      expect(fs.existsSync(path.join(pkg(), 'build'))).toBe(false);
      expect(run(process.execPath, ['out/quickstart.js'], app, withoutAddonOverride())).toBe(EXPECTED);
      const info = JSON.parse(run('npx', ['--no-install', 'rvma', 'info', '--json'], app, withoutAddonOverride()));
      expect(info.rvma.addon).toBe(path.join(prebuilds(), 'rvma-verbs.node'));
    });

    test('one that does not load here is passed over for the next, by the install step and the library', () => {
      fs.mkdirSync(prebuilds(), { recursive: true });
      fs.writeFileSync(path.join(prebuilds(), 'rvma-verbs.node'), 'not a shared object');
      fs.copyFileSync(RELEASE, path.join(prebuilds(), 'rvma.node'));
      const result = install();
      expect(result.status).toBe(0);
      expect(result.stderr).toBe(`rvma: using the prebuilt addon prebuilds/${process.platform}-${process.arch}/rvma.node\n`);
      expect(run(process.execPath, ['out/quickstart.js'], app, withoutAddonOverride())).toBe(EXPECTED);
    });
  });

  describe('the rvma command from the installed package', () => {
    const env = { ...process.env, RVMA_ADDON: ADDON };

    test('npx rvma info --json probes the providers', () => {
      const info = JSON.parse(run('npx', ['--no-install', 'rvma', 'info', '--json'], app, env));
      expect(info.rvma.addon).toBe(path.resolve(ADDON));
      for (const name of ['loopback', 'tcp', 'shm']) expect(info.providers.find((p: { name: string }) => p.name === name).usable).toBe(true);
    });

    test('npx rvma bench tcp writes its results and plots to ./rvma-results', () => {
      const args = ['--no-install', 'rvma', 'bench', 'tcp', '--reps', '1', '--scenarios', 'rtt8,bw64k', '--variants', 'mailbox,c', '--no-rate'];
      const output = run('npx', args, app, env);
      expect(output).toMatch(/^C sockets /m); // the C baseline compiled from the shipped bench/c
      const files = fs.readdirSync(path.join(app, 'rvma-results')).sort();
      expect(files.filter((f) => f.endsWith('.json'))).toHaveLength(1);
      expect(files.filter((f) => f.endsWith('.svg'))).toHaveLength(2);
      expect(files.filter((f) => f.endsWith('.png'))).toHaveLength(2);
    });

    test('npx rvma demo pipeline says what to install when its model runtime is missing', async () => {
      const result = spawnSync('npx', ['--no-install', 'rvma', 'demo', 'pipeline'], { cwd: app, env, encoding: 'utf8', timeout: 60_000 });
      expect(result.status).toBe(1);
      // (npx may add its own warnings about this checkout's npm settings.)
      expect(result.stderr).toMatch(/^rvma demo: the pipeline demo needs onnxruntime-node and onnx-proto: npm install onnxruntime-node onnx-proto$/m);
    });

    const redisTest = findRedisServer() || process.env.REDIS_URL ? test : test.skip;
    redisTest('npx rvma directory ls lists a node registered in Redis', async () => {
      const redis = await startRedis();
      const directory = await RedisDirectory.connect({ url: redis.url, cluster: 'consumer', connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS });
      try {
        await directory.register(nodeRecord('consumer-node', { labels: ['/job:app/task:0'] }));
        const listed = await runAsync('npx', ['--no-install', 'rvma', 'directory', 'ls', '--redis', redis.url, '--connect-timeout', `${TEST_CONNECT_TIMEOUT_MS}`, '--cluster', 'consumer', '--json'], app, env);
        expect(JSON.parse(listed).map((n: { nodeId: string }) => n.nodeId)).toEqual(['consumer-node']);
      } finally {
        await directory.close();
        await redis.stop();
      }
    });
  });
});
