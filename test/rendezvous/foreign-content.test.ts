// A recv's one-time content mailbox takes puts only from the node its request went to: a third
// node that guesses the mailbox's vaddr (dynamic vaddrs are handed out in order) is refused with
// ERR_RVMA_FORBIDDEN, and the recv completes with the sender's bytes.
import { MemoryDirectoryHub, type RvmaError, createKey } from '../../src';
import { DYNAMIC_VADDR_BASE } from '../../src/mailbox/endpoint-options';
import { IN_PROCESS_PROVIDERS, bytesOf, device, floats, task, trackRendezvous, uniqueJob } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };
const GUESSES = 64n;

describe.each(IN_PROCESS_PROVIDERS)('content mailboxes refuse a third node (provider %s)', (provider) => {
  test('every guessed put is refused or finds no mailbox; the tensor arrives intact', async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob();
    const sender = await rendezvous.node(hub, task(job, 0), provider);
    const receiver = await rendezvous.node(hub, task(job, 1), provider);
    const intruder = await rendezvous.node(hub, task(job, 2), provider);
    const key = createKey(device(sender.task), sender.endpoint.incarnation, device(receiver.task), 'weights');

    // Step 1 caches the tensor's meta, so step 2's recv opens its content mailbox at once.
    sender.mgr.find(1).send(key, floats([16], 1));
    await receiver.mgr.find(1).recv(key, WAIT);
    const expected = floats([16], 2);
    const received = receiver.mgr.find(2).recv(key, WAIT);
    received.catch(() => {}); // asserted below; a failure must not go unhandled meanwhile
    await new Promise((resolve) => setImmediate(resolve));

    const outcomes = new Map<string, number>();
    const forged = Buffer.alloc(64, 0xee);
    for (let vaddr = DYNAMIC_VADDR_BASE; vaddr < DYNAMIC_VADDR_BASE + GUESSES; vaddr++) {
      const code = await intruder.endpoint.put(receiver.endpoint.nodeId, vaddr, forged, WAIT).then(
        () => 'placed',
        (error: RvmaError) => error.code,
      );
      outcomes.set(code, (outcomes.get(code) ?? 0) + 1);
    }
    expect(outcomes.get('placed')).toBeUndefined();
    expect(outcomes.get('ERR_RVMA_FORBIDDEN')).toBeGreaterThanOrEqual(1);
    expect((outcomes.get('ERR_RVMA_FORBIDDEN') ?? 0) + (outcomes.get('ERR_RVMA_NO_MAILBOX') ?? 0)).toBe(Number(GUESSES));

    sender.mgr.find(2).send(key, expected);
    const { tensor } = await received;
    expect(bytesOf(tensor).equals(bytesOf(expected))).toBe(true);
  });
});
