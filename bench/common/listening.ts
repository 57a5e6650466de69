// Waits until something listens on a local TCP port, read from /proc/net/tcp{,6}. A tool's
// server (perftest, ucx_perftest) prints its "waiting" banner into a buffered pipe, and its
// client gives up at once when nobody listens yet, so the banner cannot say when to start it.
import * as fs from 'node:fs';

const LISTEN = '0A'; // TCP_LISTEN in /proc/net/tcp's st column
const POLL_MS = 50;

export function isListening(port: number): boolean {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    for (const line of text.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state === LISTEN && local?.endsWith(`:${hexPort}`)) return true;
    }
  }
  return false;
}

/** Resolves once port is listening; rejects after timeoutMs or as soon as `gone` settles. */
export async function waitListening(port: number, timeoutMs: number, gone: Promise<unknown>): Promise<void> {
  let ended: unknown;
  gone.then(
    () => (ended ??= new Error(`exited before listening on port ${port}`)),
    (error: unknown) => (ended ??= error),
  );
  const deadline = Date.now() + timeoutMs;
  while (!isListening(port)) {
    if (ended !== undefined) throw ended;
    if (Date.now() > deadline) throw new Error(`nothing listened on port ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
