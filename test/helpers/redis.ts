// A private Redis for directory tests (support/private-redis.ts's RedisProcess), stopped after
// the suite. A user's Redis is never touched unless REDIS_URL names it explicitly; then that URL
// is used and restart tests are skipped (we cannot restart it).
import type { Directory, DirectoryEvent } from '../../src/directory';
import { RedisProcess, findRedisServer, freePort, ping } from '../../support/private-redis';

export { findRedisServer, freePort, ping };

export interface RedisServer {
  url: string;
  port: number;
  /** False when REDIS_URL points at an external server: stop()/restart() are not ours to do. */
  owned: boolean;
  stop(): Promise<void>;
  /** (Re)starts the server on the same port, empty (owned servers only); also after stop(). */
  restart(): Promise<void>;
}

/**
 * For clients of a private test Redis: a loaded CI machine (the ASan suite, many child
 * processes on two cores) can take longer than the 2 s default to answer a new connection.
 */
export const TEST_CONNECT_TIMEOUT_MS = 15_000;

/** Whether Redis suites can run here, and why not when they cannot. */
export function redisAvailability(): { available: true } | { available: false; reason: string } {
  if (process.env.REDIS_URL) return { available: true };
  if (findRedisServer()) return { available: true };
  return {
    available: false,
    reason: 'redis-server is not installed (looked in REDIS_SERVER, /usr/bin, /usr/local/bin and PATH) and REDIS_URL is not set',
  };
}

/** Restart tests need a server we own. */
export const canRestartRedis = !process.env.REDIS_URL;

/**
 * describe() for suites that need Redis. Without Redis: under CI the suite fails with the
 * reason (a missing dependency must not pass silently); elsewhere it is skipped with a warning.
 */
export function describeRedis(name: string, body: () => void): void {
  const availability = redisAvailability();
  if (availability.available) {
    describe(name, body);
    return;
  }
  const message = `${name}: ${availability.reason}`;
  if (process.env.CI) {
    describe(name, () => {
      beforeAll(() => {
        throw new Error(`${message}. CI must provide Redis 7 (install redis-server or set REDIS_URL).`);
      });
      test('needs Redis', () => {});
    });
    return;
  }
  console.warn(`skipping ${message}`);
  describe.skip(name, body);
}

/**
 * Starts a private redis-server (or wraps REDIS_URL). Call stop() in afterAll. `args` are more
 * server options (a password, ACL users, TLS); a server started with them is always private.
 */
export async function startRedis(args: string[] = []): Promise<RedisServer> {
  if (process.env.REDIS_URL && !args.length) return externalRedis(process.env.REDIS_URL);
  const server = await RedisProcess.start(args);
  return { url: server.url, port: server.port, owned: true, stop: () => server.stop(), restart: () => server.restart() };
}

function externalRedis(url: string): RedisServer {
  const port = Number(new URL(url).port || 6379);
  return {
    url,
    port,
    owned: false,
    async stop() {},
    async restart() {
      throw new Error('restart(): REDIS_URL names an external Redis; restart tests must be skipped');
    },
  };
}

/** Bounded poll: resolves with check()'s first truthy value, or throws after timeoutMs. */
export async function pollFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${what}: not within ${timeoutMs} ms${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Reads a directory's watch() with bounded waits. Events that a wait does not ask for stay
 * queued for later waits, and a timed-out wait keeps its pending next() for the following
 * call, so no event is lost between waits.
 */
export class WatchReader {
  private readonly controller = new AbortController();
  readonly iterator: AsyncIterableIterator<DirectoryEvent>;
  /** Every event read so far (type:nodeId), in arrival order, for assertions and messages. */
  readonly seen: string[] = [];
  private readonly backlog: DirectoryEvent[] = [];
  private pending: Promise<IteratorResult<DirectoryEvent>> | undefined;

  constructor(directory: Directory) {
    this.iterator = directory.watch({ signal: this.controller.signal });
  }

  /** The first not yet taken event matching `match`; throws after timeoutMs. */
  async next(what: string, match: (event: DirectoryEvent) => boolean, timeoutMs: number): Promise<DirectoryEvent> {
    const queued = this.backlog.findIndex(match);
    if (queued >= 0) return this.backlog.splice(queued, 1)[0];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.pending ??= this.iterator.next();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
      });
      const result = await Promise.race([this.pending, timeout]).finally(() => clearTimeout(timer));
      if (result === 'timeout') {
        throw new Error(`watch: no ${what} within ${timeoutMs} ms (events seen: ${this.seen.join(', ') || 'none'})`);
      }
      this.pending = undefined;
      if (result.done) throw new Error(`watch: the iterator ended before ${what} (events seen: ${this.seen.join(', ') || 'none'})`);
      this.seen.push(`${result.value.type}:${result.value.node.nodeId}`);
      if (match(result.value)) return result.value;
      this.backlog.push(result.value);
    }
  }

  /** A join/update/leave of the node with this id (and incarnation, if given). */
  event(type: DirectoryEvent['type'], nodeId: string, incarnation: string | undefined, timeoutMs: number): Promise<DirectoryEvent> {
    return this.next(
      `${type} of ${nodeId}`,
      (e) => e.type === type && e.node.nodeId === nodeId && (incarnation === undefined || e.node.incarnation === incarnation),
      timeoutMs,
    );
  }

  close(): void {
    this.controller.abort();
  }
}
