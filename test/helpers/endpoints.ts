// Endpoints for tests: unique node ids (they are unique per process, and jest may run several
// files in one worker) and automatic close after every test.
import { randomBytes } from 'node:crypto';
import { Endpoint, type EndpointOptions, type ProgressMode } from '../../src';

export const PROGRESS_MODES: ProgressMode[] = ['loop', 'thread'];

/** First vaddr above the library's reserved range. */
export const VADDR = 0x10000n;

const run = randomBytes(4).toString('hex');
let counter = 0;

export function uniqueNodeId(label = 'node'): string {
  counter += 1;
  return `${label}-${run}-${counter}`;
}

export interface EndpointTracker {
  /** An endpoint with a unique node id (unless one is given), closed after the test. */
  create(options?: EndpointOptions): Promise<Endpoint>;
  /** A receiver and a sender in the same progress mode. */
  pair(progress: ProgressMode): Promise<{ receiver: Endpoint; sender: Endpoint }>;
  /** n sender endpoints in the same progress mode. */
  many(progress: ProgressMode, n: number, label?: string): Promise<Endpoint[]>;
}

/** Call once per file (top level); every endpoint it creates is closed in afterEach. */
export function trackEndpoints(): EndpointTracker {
  const open: Endpoint[] = [];
  afterEach(async () => {
    const all = open.splice(0);
    await Promise.all(all.map((endpoint) => endpoint.close()));
  });
  const create = async (options: EndpointOptions = {}): Promise<Endpoint> => {
    const endpoint = await Endpoint.create({ nodeId: uniqueNodeId(), ...options });
    open.push(endpoint);
    return endpoint;
  };
  return {
    create,
    async pair(progress) {
      const receiver = await create({ nodeId: uniqueNodeId('receiver'), progress });
      const sender = await create({ nodeId: uniqueNodeId('sender'), progress });
      return { receiver, sender };
    },
    async many(progress, n, label = 'sender') {
      const endpoints: Endpoint[] = [];
      for (let i = 0; i < n; i++) endpoints.push(await create({ nodeId: uniqueNodeId(label), progress }));
      return endpoints;
    },
  };
}

/** Yields to the event loop until check() holds, at most `iterations` times. */
export async function pollUntil(check: () => boolean, iterations = 100_000): Promise<boolean> {
  for (let i = 0; i < iterations; i++) {
    if (check()) return true;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return check();
}
