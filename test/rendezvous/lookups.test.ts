// A remote recv finds its sender through the directory once per sender task, not once per
// recv (with Redis that is a round trip each), and asks again when the key names another
// incarnation (the sender restarted) or the node it knew is gone.
import { MemoryDirectoryHub, type RendezvousMgr, createKey } from '../../src';
import { expectRejects } from '../helpers/errors';
import { device, floats, task, trackRendezvous, uniqueJob } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };

function countLookups(mgr: RendezvousMgr): { count: number } {
  const counted = { count: 0 };
  const directory = mgr.endpoint.directory;
  const original = directory.resolveLabel.bind(directory);
  directory.resolveLabel = (label: string) => {
    counted.count++;
    return original(label);
  };
  return counted;
}

test('100 recvs from one sender task cost one directory lookup', async () => {
  const { sender, receiver, key } = await rendezvous.pair('tcp');
  const lookups = countLookups(receiver.mgr);
  for (let step = 0; step < 100; step++) {
    sender.mgr.find(step).send(key('t'), floats([4], step));
    await receiver.mgr.find(step).recv(key('t'), WAIT);
    sender.mgr.cleanup(step);
    receiver.mgr.cleanup(step);
  }
  expect(lookups.count).toBe(1);
});

test('a sender that restarted is looked up again: its new incarnation is found, the old key refused', async () => {
  const hub = new MemoryDirectoryHub();
  const job = uniqueJob();
  const first = await rendezvous.node(hub, task(job, 0), 'tcp');
  const receiver = await rendezvous.node(hub, task(job, 1), 'tcp');
  const keyOf = (incarnation: string) => createKey(device(first.task), incarnation, device(receiver.task), 'w');
  const lookups = countLookups(receiver.mgr);
  const oldKey = keyOf(first.endpoint.incarnation);
  first.mgr.find(1).send(oldKey, floats([2], 1));
  await receiver.mgr.find(1).recv(oldKey, WAIT);
  await first.mgr.close();
  await first.endpoint.close();

  const second = await rendezvous.node(hub, task(job, 0), 'tcp');
  const newKey = keyOf(second.endpoint.incarnation);
  second.mgr.find(2).send(newKey, floats([2], 2));
  await receiver.mgr.find(2).recv(newKey, WAIT);
  await expectRejects(receiver.mgr.find(3).recv(oldKey, WAIT), 'ERR_RVMA_PEER_LOST', /names incarnation/);
  expect(lookups.count).toBeGreaterThanOrEqual(2);
  expect(lookups.count).toBeLessThanOrEqual(3);
});
