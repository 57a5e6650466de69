// Compiles one of bench/c/*.c with `cc -O2` into a temporary directory, for a C baseline row.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The program's path (remove its directory when done), or an Error saying why there is none. */
export function compileC(root: string, name: string): string | Error {
  const source = path.join(root, 'bench', 'c', `${name}.c`);
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `rvma-${name}-`)), name);
  try {
    execFileSync('cc', ['-O2', '-o', out, source], { stdio: ['ignore', 'ignore', 'pipe'] });
    return out;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return new Error(`cc -O2 ${source} failed${stderr ? `: ${stderr}` : ''}`);
  }
}

/** Removes a program compileC made (and its directory). */
export function removeCompiled(program: string | Error): void {
  if (typeof program === 'string') fs.rmSync(path.dirname(program), { recursive: true, force: true });
}
