// One run of a two-sided benchmark tool (ucx_perftest, perftest's ib_write_*): its server
// started, its client once the server listens on the setup port, the client's output returned;
// the server is stopped either way.
import { waitListening } from './listening';
import { runProgram } from './process';

/** Setup ports, a fresh one for each run (cycling over `count`), so one in TIME_WAIT never matters. */
export function portCycle(first: number, count: number): () => number {
  let next = 0;
  return () => first + (next++ % count);
}

export interface ServerClient {
  /** Command and arguments of each side. */
  server: [string, string[]];
  client: [string, string[]];
  /** Where the server takes its client's setup connection. */
  port: number;
  timeoutMs: number;
  listenTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
}

/** The client's stdout once both sides exited 0. */
export async function runServerClient(run: ServerClient): Promise<string> {
  const options = { timeoutMs: run.timeoutMs, env: run.env };
  const server = runProgram(...run.server, options);
  try {
    await waitListening(run.port, run.listenTimeoutMs, server.output);
    const client = runProgram(...run.client, options);
    const [out] = await Promise.all([client.output, server.output]);
    return out;
  } finally {
    server.kill(); // a no-op once it exited; stops it when its client failed
  }
}
