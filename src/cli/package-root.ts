// Where the rvma package lives: its root holds package.json, dist/ and, in a checkout, the
// sources. Found by walking up, since this file runs from src/cli (tests) or dist/src/cli.
import * as fs from 'node:fs';
import * as path from 'node:path';

export function packageRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === 'rvma') return dir;
    if (path.dirname(dir) === dir) throw new Error(`the rvma package root was not found above ${__dirname}`);
  }
}

export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The compiled file of the package at dist/<relative> (benchmarks and examples run from dist). */
export function compiled(relative: string): string {
  const file = path.join(packageRoot(), 'dist', relative);
  if (!fs.existsSync(file)) throw new Error(`${path.join('dist', relative)} is missing: run \`npm run build\` in ${packageRoot()}`);
  return file;
}
