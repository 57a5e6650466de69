// The public types as a strict application compiles them: public-api.types.ts must compile (so
// each of its @ts-expect-error lines still meets an error), and a misspelt event must not.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const TYPES_FILE = path.join(__dirname, 'public-api.types.ts');

jest.setTimeout(120_000);

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-types-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs tsc over `file` alone, strict as an application may be, the .d.ts files it reaches checked too (skipLibCheck off). */
function compile(name: string, file: string): { status: number | null; output: string } {
  const config = path.join(dir, `${name}.tsconfig.json`);
  const compilerOptions = {
    target: 'ES2022',
    module: 'commonjs',
    lib: ['ES2022'],
    esModuleInterop: true,
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
    typeRoots: [path.join(ROOT, 'node_modules/@types')],
  };
  fs.writeFileSync(config, JSON.stringify({ compilerOptions, files: [file] }));
  const run = spawnSync(process.execPath, [TSC, '--noEmit', '--pretty', 'false', '-p', config], { encoding: 'utf8', timeout: 100_000 });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

test('public-api.types.ts compiles strict, each expected error still an error', () => {
  const { status, output } = compile('types', TYPES_FILE);
  expect(output).toBe('');
  expect(status).toBe(0);
});

test('a misspelt event name fails to compile, named in the error', () => {
  const file = path.join(dir, 'misspelt.ts');
  const src = path.join(ROOT, 'src').split(path.sep).join('/');
  fs.writeFileSync(
    file,
    [
      `import { Endpoint } from '${src}';`,
      'export function listen(ep: Endpoint): void {',
      "  ep.on('peerLots', () => undefined);",
      '}',
      '',
    ].join('\n'),
  );
  const { status, output } = compile('misspelt', file);
  expect(status).not.toBe(0);
  expect(output).toMatch(/misspelt\.ts\(3,\d+\): error TS\d+: .*"peerLots"/);
});
