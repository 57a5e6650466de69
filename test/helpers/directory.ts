// Vocabulary of the directory tests: records for nodes that need not exist as endpoints, and a
// promise's outcome as one comparable string.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type NodeRecord } from '../../src/directory';

/**
 * A record of this host and process with a fresh incarnation; `fields` override any part. The
 * pid is a live one: MemoryDirectory lets a registration replace a record only if a launcher
 * seeded it or its process is gone.
 */
export function nodeRecord(nodeId: string, fields: Partial<NodeRecord> = {}): NodeRecord {
  return {
    nodeId,
    incarnation: randomBytes(8).toString('hex'),
    addresses: { tcp: 'tcp://127.0.0.1:4100' },
    host: hostname(),
    pid: process.pid,
    capabilities: ['tcp'],
    labels: [],
    startTime: Date.now(),
    ...fields,
  };
}

/** 'resolved', or the code of the error the promise rejected with. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return (error as { code?: string }).code ?? `no code: ${String(error)}`;
  }
}
