// The tensor rendezvous over verbs: two managers in this process on provider 'verbs', found
// through a shared directory hub by their task labels and reached at their published rdma://
// addresses. Runs inside the Soft-RoCE guest only.
import { type Tensor, createKey } from '../../src';
import { device, trackRendezvous } from '../helpers/rendezvous';
import { describeInGuest } from '../helpers/verbs';

interface Spec {
  dtype: string;
  shape: number[];
  seed: number;
}
// Shared with the process tests, so the tensors are the same everywhere.
const tensors = require('../fixtures/rendezvous-tensors.js') as {
  makeTensor(spec: Spec): Tensor;
  digest(t: Tensor): { dtype: string; shape: number[]; sha256: string };
};
const rendezvous = trackRendezvous();
const WAIT = { timeout: 60_000 };

/** Eager-sized tensors, one read by the receiver (4 MiB), a string tensor. */
function specs(seed: number): Spec[] {
  return [
    { dtype: 'float32', shape: [1024, 1024], seed: seed + 1 },
    { dtype: 'int64', shape: [2, 9], seed: seed + 2 },
    { dtype: 'bfloat16', shape: [5], seed: seed + 3 },
    { dtype: 'uint8', shape: [20_000], seed: seed + 4 },
    { dtype: 'string', shape: [4, 4], seed: seed + 5 },
  ];
}

describeInGuest('rendezvous over verbs', () => {
  jest.setTimeout(180_000);

  test('tensors go both ways with exact bytes, three times (the second step takes the direct path, the third is pushed)', async () => {
    // verbs sends a gathered put in place at any size: push every numeric key, however large.
    const push = { pushMaxTensorBytes: 64 << 20 };
    const { sender, receiver } = await rendezvous.pair('verbs', { sender: push, receiver: push });
    expect(await sender.endpoint.directory.resolveLabel(receiver.task)).toMatchObject({ addresses: { rdma: receiver.endpoint.address } });
    const key = (from: typeof sender, to: typeof sender, name: string) =>
      createKey(device(from.task), from.endpoint.incarnation, device(to.task), name);
    const n = specs(0).length;
    const lost: string[] = [];
    for (const side of [sender, receiver]) side.endpoint.on('peerLost', (info) => lost.push(`${side.task} lost ${info.nodeId}: ${info.reason}`));
    for (const step of [1, 2, 3]) {
      if (step === 3) {
        // The second step offered push mailboxes (every key but the string one): wait for the acceptances.
        const accepted = () => sender.mgr.pushMailboxes === n - 1 && receiver.mgr.pushMailboxes === n - 1;
        for (const end = Date.now() + 10_000; !accepted() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
        for (const side of [sender, receiver]) {
          expect(side.mgr.counters).toMatchObject({ requests: 2 * n, metaResponses: n, reRequests: n, directPuts: n, clonePuts: n, errors: 0 });
        }
      }
      const all = specs(step * 100);
      const there = all.map((_, i) => receiver.mgr.find(step).recv(key(sender, receiver, `out${i}`), WAIT));
      const back = all.map((_, i) => sender.mgr.find(step).recv(key(receiver, sender, `in${i}`), WAIT));
      all.forEach((spec, i) => sender.mgr.find(step).send(key(sender, receiver, `out${i}`), tensors.makeTensor(spec)));
      all.forEach((spec, i) => receiver.mgr.find(step).send(key(receiver, sender, `in${i}`), tensors.makeTensor(spec)));
      // Every receive settles before anything is asserted, so a failure reports all of them and why a peer was lost.
      const settled = await Promise.allSettled([...there, ...back]);
      expect({ step, lost, failed: settled.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : [])) }).toEqual({ step, lost: [], failed: [] });
      for (const got of [settled.slice(0, n), settled.slice(n)]) {
        got.forEach((r, i) => {
          const { tensor, isDead } = (r as PromiseFulfilledResult<Awaited<(typeof there)[0]>>).value;
          expect(isDead).toBe(false);
          expect(tensors.digest(tensor)).toEqual(tensors.digest(tensors.makeTensor(all[i])));
        });
      }
    }
    for (const side of [sender, receiver]) {
      // Step 3: the string tensor asked again (direct put), the others were pushed.
      expect(side.mgr.counters).toMatchObject({ requests: 2 * n + 1, directPuts: n + 1, clonePuts: n, pushes: n - 1, pushesReceived: n - 1, errors: 0 });
    }
  });
});
