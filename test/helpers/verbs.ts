// Verbs endpoints for the tests in test/rdma, which run only inside the Soft-RoCE guest of
// scripts/rdma-vm (`npm run test:rdma`): both ends listen on the rxe netdev's address.
import { readFileSync } from 'node:fs';
import { type Endpoint, type EndpointOptions, type ProgressMode } from '../../src';
import { type EndpointTracker, uniqueNodeId } from './endpoints';

export const IN_VM = process.env.RVMA_IN_VM === '1';
export const RDMA_ADDR = process.env.RVMA_VM_RDMA_ADDR ?? '10.77.0.1';
/** Largest eager put with the default 16 KiB slots (the slot minus its 32-byte header). */
export const EAGER_MAX = 16 * 1024 - 32;

/** A verbs endpoint listening on rxe0, closed after the test by the tracker. */
export function verbsEndpoint(tracker: EndpointTracker, progress: ProgressMode, extra: EndpointOptions = {}): Promise<Endpoint> {
  return tracker.create({ nodeId: uniqueNodeId('rdma'), provider: 'verbs', listen: `rdma://${RDMA_ADDR}:0`, progress, ...extra });
}

/**
 * RNR NAKs rxe0 has sent since the guest booted: each time a queue pair found no receive
 * posted (a shared receive queue ran dry) and told its peer to retry. Device-wide.
 */
export function rnrNaksSent(): number {
  return Number(readFileSync('/sys/class/infiniband/rxe0/ports/1/hw_counters/send_rnr_err', 'utf8'));
}

/**
 * Command prefix running node without CAP_IPC_LOCK (root would bypass the limit) under a
 * locked-memory limit of `bytes`: registrations beyond it fail as they would for a normal user.
 */
export function underMemlock(bytes: number): string[] {
  return ['setpriv', '--inh-caps=-ipc_lock', '--bounding-set=-ipc_lock', 'prlimit', `--memlock=${bytes}:${bytes}`, '--'];
}

/** Runs body as a describe block inside the guest; elsewhere reports one skipped test. */
export function describeInGuest(name: string, body: () => void): void {
  if (IN_VM) {
    describe(name, body);
  } else {
    describe(`${name} (skipped: runs only inside the Soft-RoCE guest, \`npm run test:rdma\`)`, () => {
      test.skip('needs RVMA_IN_VM=1 and an ACTIVE rxe0', () => undefined);
    });
  }
}
