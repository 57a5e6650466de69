// The multi-process demo end to end, started as `npm start` starts it (`rvma demo rendezvous`):
// the launcher forks its workers, relays their directory records, and checks every received
// byte. It must exit 0 with its verdict, and its workers (processes of one host) must have used
// shared memory.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { CLI } from '../helpers/cli';

const LIMIT_MS = 60_000;

test('npm start demo (rvma demo rendezvous --steps 16): exits 0 and every tensor arrives byte for byte', async () => {
  expect(fs.existsSync(CLI)).toBe(true); // built by `npm run build`
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.REDIS_URL; // the embedded directory: no outside service
  delete env.RVMA_DEMO_STEPS;
  const child = spawn(process.execPath, [CLI, 'demo', 'rendezvous', '--steps', '16'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  let timer: NodeJS.Timeout | undefined;
  const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; timedOut: boolean }>((resolve) => {
    timer = setTimeout(() => {
      // The command, its launcher and the workers are one process group: take them all down.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      resolve({ code: null, signal: 'SIGKILL', timedOut: true });
    }, LIMIT_MS);
    child.on('exit', (code, signal) => resolve({ code, signal, timedOut: false }));
  });
  clearTimeout(timer);
  expect({ ...result, tail: result.code === 0 ? '' : out.slice(-4000) }).toEqual({ code: 0, signal: null, timedOut: false, tail: '' });
  expect(out).toMatch(/rvma demo: 3 workers, 16 steps/);
  expect(out).toMatch(/byte mismatches\s+0/);
  expect(out).toMatch(/tensors received\s+192/);
  // Workers on one host reach each other over shared memory (each has its two ring neighbours).
  expect(out).toMatch(/connections between workers\s+shm: 6\n/);
  expect(out).toContain('every tensor arrived byte for byte');
}, LIMIT_MS + 10_000);
