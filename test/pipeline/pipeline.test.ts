// The pipeline example end to end, in a small configuration: 3 worker processes over each of
// shm and tcp, a re-split that moves KV caches, a worker killed with SIGKILL and recovery on
// the survivors; the launcher exits 0 only if every token equals the single-process run.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { describeRedis } from '../helpers/redis';
import { SANITIZED } from '../helpers/transports';

const LAUNCHER = path.join(__dirname, '..', '..', 'dist', 'examples', 'pipeline', 'launcher.js');

function runLauncher(env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [LAUNCHER], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the launcher did not finish within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describeRedis('pipeline example', () => {
  test.each(['shm', 'tcp'])('tokens equal the single-process run through a re-split and a recovery (%s)', async (transport) => {
    const { code, output } = await runLauncher(
      {
        RVMA_PIPELINE_MODEL: 'tiny',
        RVMA_PIPELINE_LAYERS: '6',
        RVMA_PIPELINE_TOKENS: '10',
        RVMA_PIPELINE_RESPLIT_AT: '3',
        RVMA_PIPELINE_KILL_AT: '6',
        RVMA_PIPELINE_TRANSPORT: transport,
        RVMA_PIPELINE_DEADLINE_MS: String(SANITIZED ? 170_000 : 80_000),
      },
      SANITIZED ? 180_000 : 90_000,
    );
    expect(output).toContain('every one of the 10 tokens equals the single-process run');
    expect(output).toMatch(/split from token 3 +\[0,1\) \[1,3\) \[3,6\) +\(RESIZE_CHAIN\)/);
    expect(output).toMatch(/split from token 6 +\[0,3\) \[3,6\) +\(recovery: 2 ranks\)/);
    expect(code).toBe(0);
  }, 200_000);
});
