// The frame of a RedisDirectory suite on one private Redis: the server started before the suite
// and stopped after it, a fresh cluster name per test, and what a test opened closed after it.
import { randomBytes } from 'node:crypto';
import { RedisDirectory, type RedisDirectoryOptions } from '../../src/directory';
import { type RedisServer, WatchReader, startRedis, TEST_CONNECT_TIMEOUT_MS } from './redis';

const run = randomBytes(3).toString('hex');
let counter = 0;
/** An id no other test of this run uses (nor an earlier run, in a Redis that outlives it). */
export const uniqueId = (label: string): string => `${label}-${run}-${++counter}`;

export interface RedisSuite {
  /** The suite's server (set once the suite started). */
  readonly server: RedisServer;
  /** This test's cluster name. */
  readonly cluster: string;
  /** Steps run after the test, last deferred first (errors ignored). */
  readonly cleanup: (() => Promise<void>)[];
  /** A directory of this test's cluster, closed after the test; `more` overrides the suite's options. */
  connect(more?: RedisDirectoryOptions): Promise<RedisDirectory>;
  /** A watch that has taken its first snapshot (list() queues behind it on the same connection). */
  watchFrom(directory: RedisDirectory): Promise<WatchReader>;
}

/**
 * Call in a describe(). options: what every connect() passes (ttlMs, watchIntervalMs);
 * beforeCleanup: what must end before the test's cleanup steps run (its child processes).
 */
export function redisSuite(label: string, options: RedisDirectoryOptions, beforeCleanup?: () => Promise<void>): RedisSuite {
  let server: RedisServer | undefined;
  let cluster = '';
  const cleanup: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => {
    cluster = uniqueId(label);
  });
  afterEach(async () => {
    await beforeCleanup?.();
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });
  return {
    get server() {
      return server!;
    },
    get cluster() {
      return cluster;
    },
    cleanup,
    async connect(more = {}) {
      const directory = await RedisDirectory.connect({ url: server!.url, cluster, connectTimeoutMs: TEST_CONNECT_TIMEOUT_MS, ...options, ...more });
      cleanup.push(() => directory.close());
      return directory;
    },
    async watchFrom(directory) {
      const reader = new WatchReader(directory);
      cleanup.push(async () => reader.close());
      await directory.list();
      return reader;
    },
  };
}
