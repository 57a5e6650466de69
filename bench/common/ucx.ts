// One ucx_perftest server/client pair on 127.0.0.1 (bench:shm over shared memory, bench:tcp's
// rate part over tcp): its Final row, checked to have run the iterations asked for.
import { type Placement, pinned } from './placement';
import { runServerClient } from './server-client';
import { parseUcxFinal } from './ucx-output';

export const ITERATIONS = '# iterations';
const LISTEN_TIMEOUT_MS = 10_000;

export interface UcxPair {
  /** UCX_TLS: the transports UCX may use. */
  tls: string;
  port: number;
  /** The client's test arguments; -n is `iterations`. */
  args: string[];
  iterations: number;
  /** Columns the row must have (ITERATIONS always). */
  required: string[];
  placement: Placement | undefined;
  timeoutMs: number;
}

export async function runUcxPair(pair: UcxPair): Promise<Record<string, number>> {
  const port = String(pair.port);
  const out = await runServerClient({
    server: pinned(pair.placement?.receiver, 'ucx_perftest', ['-p', port]),
    client: pinned(pair.placement?.sender, 'ucx_perftest', ['127.0.0.1', '-p', port, ...pair.args, '-n', String(pair.iterations)]),
    port: pair.port,
    timeoutMs: pair.timeoutMs,
    listenTimeoutMs: LISTEN_TIMEOUT_MS,
    env: { ...process.env, UCX_TLS: pair.tls },
  });
  const row = parseUcxFinal(out, [ITERATIONS, ...pair.required]);
  if (row[ITERATIONS] !== pair.iterations) throw new Error(`ucx_perftest ran ${row[ITERATIONS]} iterations, asked for ${pair.iterations}`);
  return row;
}
