// Finds UCX's ucx_perftest, installing Debian's ucx-utils when it is missing and this process
// may (root, apt-get present); otherwise says why the UCX row is skipped.
import { spawnSync } from 'node:child_process';

const PACKAGE = 'ucx-utils';
const INSTALL_TIMEOUT_MS = 300_000;

function found(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function apt(args: string[]): { ok: boolean; output: string } {
  const run = spawnSync('apt-get', args, {
    encoding: 'utf8',
    timeout: INSTALL_TIMEOUT_MS,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return { ok: run.status === 0, output: `${run.stdout ?? ''}${run.stderr ?? ''}${run.error?.message ?? ''}` };
}

function install(): Error | undefined {
  if (process.getuid?.() !== 0) return new Error(`ucx_perftest not found, and not root to install ${PACKAGE}`);
  if (!found('apt-get')) return new Error(`ucx_perftest not found, and no apt-get to install ${PACKAGE}`);
  console.log(`installing ${PACKAGE} (apt-get install -y ${PACKAGE}) ...`);
  let run = apt(['install', '-y', '-q', PACKAGE]);
  // Only a machine without package lists needs them fetched.
  if (!run.ok && /Unable to locate package|has no installation candidate/.test(run.output)) {
    console.log('no package lists: apt-get update ...');
    const update = apt(['update', '-q']);
    if (!update.ok) return new Error(`apt-get update failed: ${update.output.trim().split('\n').pop()}`);
    run = apt(['install', '-y', '-q', PACKAGE]);
  }
  if (!run.ok) return new Error(`apt-get install ${PACKAGE} failed: ${run.output.trim().split('\n').pop()}`);
  return found('ucx_perftest') ? undefined : new Error(`${PACKAGE} installed, but no ucx_perftest on PATH`);
}

/** UCX's version (from ucx_info -v), once ucx_perftest is there; an Error says why not. */
export function ensureUcx(): string | Error {
  if (!found('ucx_perftest')) {
    const failed = install();
    if (failed) return failed;
  }
  const info = spawnSync('ucx_info', ['-v'], { encoding: 'utf8' });
  return /version:?\s*([\d.]+)/i.exec(info.stdout ?? '')?.[1] ?? 'unknown';
}
