// The package as its users get it: `npm pack`, the tarball installed into a new application,
// a strict TypeScript file compiled against the shipped declarations (skipLibCheck false), and
// the quick start run from CommonJS and from an ES module. The addon is the one this checkout
// built (RVMA_ADDON): installing with scripts would compile it again.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'consumer');
// The sanitizer run (npm run test:asan) names its own build.
const ADDON = process.env.RVMA_ADDON ?? path.join(ROOT, 'build', 'Release', 'rvma.node');
const EXPECTED = 'epoch 1: 11 bytes, "hello world"\nERR_RVMA_NO_MAILBOX\n';

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
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
    for (const file of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/registry/index.d.ts', 'CMakeLists.txt', 'native/engine.cpp', 'LICENSE']) {
      expect(fs.existsSync(path.join(pkg, file))).toBe(true);
    }
    expect(fs.existsSync(path.join(pkg, 'test'))).toBe(false);
    expect(fs.existsSync(path.join(pkg, 'dist', 'bench'))).toBe(false);
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
});
