// The package as its users get it: `npm pack` (whose prepack builds the prebuilt addons), the
// tarball installed into a new application with install scripts blocked (as npm is about to
// block them by default), a strict TypeScript file compiled against the shipped declarations
// (skipLibCheck false), and the quick start run from CommonJS and from an ES module, on the
// prebuilt addon and on the one this checkout built (RVMA_ADDON, the sanitizer build under
// test:asan). Then the rvma command from the installed package: info, a small tcp benchmark and
// its plots (their packages are optional), a directory listing. And a tarball without prebuilt
// addons, whose approved install script compiles one.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { RedisDirectory } from '../../src/directory';
import { nodeRecord } from '../helpers/directory';
import { findRedisServer, startRedis, TEST_CONNECT_TIMEOUT_MS } from '../helpers/redis';
import { SANITIZED } from '../helpers/transports';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'consumer');
// The sanitizer run (npm run test:asan) names its own build.
const ADDON = process.env.RVMA_ADDON ?? path.join(ROOT, 'build', 'Release', 'rvma.node');
const EXPECTED = 'epoch 1: 11 bytes, "hello world"\nERR_RVMA_NO_MAILBOX\n';

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The environment of a user's shell: none of the npm_* settings of the `npm test` running this. */
function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
  delete env.RVMA_ADDON;
  return { ...env, ...extra };
}

/** npm in `cwd` as a user runs it; its stderr is returned so that warnings can be checked. */
function npm(args: string[], cwd: string, timeout = 300_000): { stdout: string; stderr: string } {
  const result = spawnSync('npm', args, { cwd, env: userEnv(), encoding: 'utf8', timeout });
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} exited with ${result.status ?? result.signal}: ${result.stderr}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

/** Bytes under dir (files only, as du --apparent-size counts them). */
function treeBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(file);
    else if (entry.isFile()) total += fs.statSync(file).size;
  }
  return total;
}

/** What the application's production dependencies may take at most. */
const APP_TREE_MAX_BYTES = 20 * 2 ** 20;
const PLATFORM = `${process.platform}-${process.arch}`;

/** As run(), without blocking the event loop (the test's own Redis client must keep its lease). */
async function runAsync(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await promisify(execFile)(command, args, { cwd, env, encoding: 'utf8', timeout: 120_000 });
  return stdout;
}

describe('the packed package in a new application', () => {
  jest.setTimeout(240_000);
  let app: string;
  let tarball: string;
  let installed: { stdout: string; stderr: string };
  /** What npm warned about while packing in this checkout (its project settings, e.g. an .npmrc key it does not know). */
  let packWarnings: string[];

  beforeAll(() => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-consumer-'));
    // What `npm pack` runs first (prepack): the prebuilt addons (each built twice and compared,
    // about 2 minutes on 2 cores; kept while native/ is unchanged). Run here, and the pack
    // without scripts, since its other script (prepare) would compile dist/ again under the
    // feet of the suites running beside this one; `npm test` built dist/ before jest.
    const prepack = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.prepack as string;
    expect(prepack).toBe('bash scripts/prebuild.sh');
    execFileSync('bash', ['scripts/prebuild.sh'], { cwd: ROOT, env: userEnv(), stdio: ['ignore', 'ignore', 'pipe'], timeout: 900_000 });
    const pack = npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], ROOT);
    packWarnings = pack.stderr.split('\n').filter((line) => /npm (warn|WARN)/.test(line));
    const packed = JSON.parse(pack.stdout) as { filename: string }[];
    tarball = path.join(work, packed[0].filename);
    app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    installed = npm(['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], app);
    for (const file of fs.readdirSync(FIXTURES)) fs.copyFileSync(path.join(FIXTURES, file), path.join(app, file));
  }, 1_200_000);

  test('installs with its install script blocked, without a warning, in at most 20 MB of node_modules', () => {
    expect(packWarnings).toEqual([]);
    expect(installed.stderr).not.toMatch(/npm (warn|WARN|error)/);
    const bytes = treeBytes(path.join(app, 'node_modules'));
    expect(bytes).toBeLessThanOrEqual(APP_TREE_MAX_BYTES);
    // The plots' packages are optional peers: not installed with it.
    for (const name of ['vega', 'vega-lite', '@resvg/resvg-js']) expect(fs.existsSync(path.join(app, 'node_modules', name))).toBe(false);
  });

  test('the prebuilt addons load with no install step: the quick start and a put between two processes over tcp', () => {
    expect(run(process.execPath, ['quickstart.mjs'], app, userEnv())).toBe(EXPECTED);
    const info = JSON.parse(run('npx', ['--no-install', 'rvma', 'info', '--json'], app, userEnv()));
    expect(path.relative(path.join(app, 'node_modules', 'rvma'), info.rvma.addon)).toMatch(new RegExp(`^prebuilds/${PLATFORM}/rvma(-verbs)?\\.node$`));
    expect(run(process.execPath, ['two-processes.mjs'], app, userEnv())).toBe('received "hello over tcp" from sender\n');
  });

  afterAll(() => {
    if (app) fs.rmSync(path.dirname(app), { recursive: true, force: true });
  });

  test('ships what it needs: compiled code, declarations, the native sources to build from; no tests', () => {
    const pkg = path.join(app, 'node_modules', 'rvma');
    const shipped = ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/directory/index.d.ts', 'CMakeLists.txt', 'native/engine.cpp', 'LICENSE'];
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

  describe('the prebuilt addons in the package', () => {
    const pkg = (): string => path.join(app, 'node_modules', 'rvma');
    const prebuilds = (): string => path.join(pkg(), 'prebuilds', PLATFORM);
    const install = (): { status: number | null; stderr: string } => {
      const result = spawnSync(process.execPath, [path.join(pkg(), 'scripts', 'install.js')], { cwd: pkg(), env: userEnv(), encoding: 'utf8', timeout: 60_000 });
      return { status: result.status, stderr: result.stderr };
    };

    test('both ship, with the record of what built them', () => {
      const record = JSON.parse(fs.readFileSync(path.join(prebuilds(), 'build.json'), 'utf8'));
      expect(Object.keys(record.files).sort()).toEqual(['rvma-verbs.node', 'rvma.node']);
      for (const file of Object.keys(record.files)) expect(fs.statSync(path.join(prebuilds(), file)).size).toBeGreaterThan(0);
    });

    test('the install step, when it runs, uses the first that loads instead of compiling', () => {
      const result = install();
      expect(result.status).toBe(0);
      expect(result.stderr).toMatch(new RegExp(`^rvma: using the prebuilt addon prebuilds/${PLATFORM}/rvma(-verbs)?\\.node\n$`));
      expect(fs.existsSync(path.join(pkg(), 'build'))).toBe(false);
    });

    test('one that does not load here is passed over for the next, by the install step and the library', () => {
      const verbs = path.join(prebuilds(), 'rvma-verbs.node');
      const kept = fs.readFileSync(verbs);
      try {
        fs.writeFileSync(verbs, 'not a shared object');
        const result = install();
        expect(result).toEqual({ status: 0, stderr: `rvma: using the prebuilt addon prebuilds/${PLATFORM}/rvma.node\n` });
        expect(run(process.execPath, ['out/quickstart.js'], app, userEnv())).toBe(EXPECTED);
      } finally {
        fs.writeFileSync(verbs, kept);
      }
    });
  });

  describe('the rvma command from the installed package', () => {
    const env = { ...process.env, RVMA_ADDON: ADDON };

    test('npx rvma info --json probes the providers', () => {
      const info = JSON.parse(run('npx', ['--no-install', 'rvma', 'info', '--json'], app, env));
      expect(info.rvma.addon).toBe(path.resolve(ADDON));
      for (const name of ['loopback', 'tcp', 'shm']) expect(info.providers.find((p: { name: string }) => p.name === name).usable).toBe(true);
    });

    test('npx rvma bench tcp writes its results to ./rvma-results, and plots them once the optional plot packages are installed', () => {
      const args = ['--no-install', 'rvma', 'bench', 'tcp', '--reps', '1', '--scenarios', 'rtt8,bw64k', '--variants', 'mailbox,c', '--no-rate'];
      const bench = spawnSync('npx', args, { cwd: app, env, encoding: 'utf8', timeout: 120_000 });
      expect(bench.status).toBe(0);
      expect(bench.stdout).toMatch(/^C sockets /m); // the C baseline compiled from the shipped bench/c
      expect(bench.stderr).toMatch(/^no plots: plots need the optional packages vega, vega-lite, @resvg\/resvg-js: npm install vega vega-lite @resvg\/resvg-js \(.*\); or --no-plot$/m);
      const results = fs.readdirSync(path.join(app, 'rvma-results')).filter((f) => f.endsWith('.json'));
      expect(results).toHaveLength(1);
      const plot = spawnSync('npx', ['--no-install', 'rvma', 'plot', path.join('rvma-results', results[0])], { cwd: app, env, encoding: 'utf8', timeout: 60_000 });
      expect([plot.status, plot.stderr]).toEqual([1, expect.stringMatching(/^rvma plot: plots need the optional packages vega, vega-lite, @resvg\/resvg-js/m)]);
      npm(['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', 'vega@5.33.1', 'vega-lite@5.23.0', '@resvg/resvg-js@2.6.2'], app);
      const written = run('npx', ['--no-install', 'rvma', 'plot', path.join('rvma-results', results[0])], app, env).trim().split('\n');
      expect(written.filter((f) => f.endsWith('.svg'))).toHaveLength(2);
      expect(written.filter((f) => f.endsWith('.png'))).toHaveLength(2);
      for (const file of written) expect(fs.statSync(path.join(app, file)).size).toBeGreaterThan(0);
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

  // The sanitizer run (npm run test:asan) tests its own addon: this compile would add minutes there and test nothing new.
  (SANITIZED ? describe.skip : describe)('a package without prebuilt addons', () => {
    test('its install script, once allowed, compiles the addon, and the application runs on it', () => {
      const work = path.dirname(app);
      const unpacked = path.join(work, 'unpacked');
      fs.mkdirSync(unpacked);
      run('tar', ['-xzf', tarball, '-C', unpacked], work);
      fs.rmSync(path.join(unpacked, 'package', 'prebuilds'), { recursive: true });
      const bare = path.join(work, 'rvma-without-prebuilds.tgz');
      run('tar', ['-czf', bare, '-C', unpacked, 'package'], work);
      const other = path.join(work, 'compiling-app');
      fs.mkdirSync(other);
      fs.writeFileSync(path.join(other, 'package.json'), JSON.stringify({ name: 'compiling', version: '1.0.0', private: true }));
      fs.copyFileSync(path.join(FIXTURES, 'quickstart.mjs'), path.join(other, 'quickstart.mjs'));
      // As the README says: install (its script not run), approve the script, rebuild.
      npm(['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', bare], other);
      const pkg = path.join(other, 'node_modules', 'rvma');
      expect(fs.existsSync(path.join(pkg, 'prebuilds'))).toBe(false);
      const missing = spawnSync(process.execPath, ['quickstart.mjs'], { cwd: other, env: userEnv(), encoding: 'utf8', timeout: 60_000 });
      expect(missing.stderr).toContain('ERR_RVMA_NATIVE_UNAVAILABLE');
      expect(missing.stderr).toContain('`npm install-scripts approve rvma`, then `npm rebuild rvma`');
      npm(['install-scripts', 'approve', 'rvma'], other);
      npm(['rebuild', 'rvma'], other, 900_000);
      expect(run(process.execPath, ['quickstart.mjs'], other, userEnv())).toBe(EXPECTED);
      const info = JSON.parse(run('npx', ['--no-install', 'rvma', 'info', '--json'], other, userEnv()));
      expect(info.rvma.addon).toBe(path.join(pkg, 'build', 'Release', 'rvma.node'));
    }, 1_200_000);
  });
});
