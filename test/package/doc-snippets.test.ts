// The documentation's first examples compile as written (strict TypeScript, imports from the
// package's name resolved to this checkout): an example that names something undefined fails here.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/** The first ```ts block of a doc. */
function firstSnippet(doc: string): string {
  const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
  const match = /^```ts\n([\s\S]*?)^```$/m.exec(text);
  if (!match) throw new Error(`${doc} has no ts example`);
  return match[1];
}

test.each(['docs/rendezvous.md'])('the first example of %s compiles', (doc) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-snippet-'));
  try {
    const source = firstSnippet(doc).replace(/from 'rvma'/g, `from ${JSON.stringify(path.join(ROOT, 'src'))}`);
    fs.writeFileSync(path.join(dir, 'snippet.ts'), `export {};\n${source}`);
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = ['--noEmit', '--strict', '--target', 'ES2022', '--module', 'es2022', '--moduleResolution', 'bundler', '--skipLibCheck'];
    args.push('--types', 'node', '--typeRoots', path.join(ROOT, 'node_modules', '@types'), path.join(dir, 'snippet.ts'));
    const result = spawnSync(process.execPath, [tsc, ...args], { encoding: 'utf8', timeout: 120_000 });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
