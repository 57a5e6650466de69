// A rendezvous control message counts only if it came from the node it names: the native side
// reports the node each control put arrived from (MailboxOptions.reportSender), and the
// manager drops, and counts as forged, a message that claims another. Here a third node forges
// the sender's ERROR_STATUS, META_DATA_RESPONSE and a malformed answer while a recv waits, and
// the receiver's TENSOR_CANCEL to the sender: none of them acts, and the real tensor arrives.
// The same from a child process, over tcp.
import { MemoryDirectoryHub, createKey } from '../../src';
import { CONTROL_VADDR, type ControlMessage, Kind, encode } from '../../src/rendezvous/messages';
import { packValue } from '../../src/tensor/codec';
import { startAgent, trackChildren } from '../helpers/children';
import { IN_PROCESS_PROVIDERS, bytesOf, device, floats, nextServed, task, trackRendezvous, uniqueJob } from '../helpers/rendezvous';

const rendezvous = trackRendezvous();
const WAIT = { timeout: 10_000 };
const GUESSES = 16; // request indices the forger tries for each kind

describe.each(IN_PROCESS_PROVIDERS)('forged control messages are dropped (provider %s)', (provider) => {
  test("answers, errors and cancels claiming another node's name change nothing; the real exchange completes", async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob();
    const sender = await rendezvous.node(hub, task(job, 0), provider);
    const receiver = await rendezvous.node(hub, task(job, 1), provider);
    const forger = await rendezvous.node(hub, task(job, 2), provider);
    const key = createKey(device(sender.task), sender.endpoint.incarnation, device(receiver.task), 'weights');

    // A recv waits at the sender for its tensor: its request is parked there.
    const served = nextServed(sender.mgr.find(1));
    const received = receiver.mgr.find(1).recv(key, WAIT);
    received.catch(() => {}); // asserted below
    await served;

    const as = (node: typeof sender) => ({ from: node.endpoint.nodeId, fromIncarnation: node.endpoint.incarnation });
    const forge = async (target: typeof sender, message: ControlMessage | Uint8Array): Promise<void> => {
      const bytes = message instanceof Uint8Array ? message : encode(message);
      await forger.endpoint.put(target.endpoint.nodeId, CONTROL_VADDR, bytes, WAIT);
    };
    const meta = { dtype: 'float32', shape: [4], isDead: false, byteSize: 16 };
    for (let requestIndex = 0; requestIndex < GUESSES; requestIndex++) {
      await forge(receiver, { kind: Kind.ErrorStatus, ...as(sender), requestIndex, code: 'ERR_RVMA_ABORTED', message: 'forged' });
      await forge(receiver, { kind: Kind.MetaDataResponse, ...as(sender), requestIndex, meta: meta as never, checksum: null });
      await forge(sender, { kind: Kind.TensorCancel, ...as(receiver), requestIndex });
    }
    // Malformed (a checksum that is no CRC), but naming the sender and a request: believed, it
    // would fail that recv.
    await forge(receiver, packValue({ kind: Kind.MetaDataResponse, ...as(sender), requestIndex: 0, meta, checksum: 'bad' }));

    await waitForCount(() => receiver.mgr.counters.forged, 2 * GUESSES + 1);
    await waitForCount(() => sender.mgr.counters.forged, GUESSES);
    expect({ errors: receiver.mgr.counters.errors, metaResponses: receiver.mgr.counters.metaResponses }).toEqual({ errors: 0, metaResponses: 0 });
    expect(sender.mgr.counters.withdrawn).toBe(0);

    const expected = floats([16], 7);
    sender.mgr.find(1).send(key, expected);
    const { tensor } = await received;
    expect(bytesOf(tensor).equals(bytesOf(expected))).toBe(true);
  });
});

async function waitForCount(read: () => number, count: number): Promise<void> {
  for (let i = 0; i < 2000 && read() < count; i++) await new Promise((r) => setTimeout(r, 5));
  expect(read()).toBe(count);
}

describe('forged control messages from another process', () => {
  const children = trackChildren('each');

  test("a child forging the sender's error for a waiting recv is dropped; the real tensor arrives", async () => {
    const hub = new MemoryDirectoryHub();
    const job = uniqueJob();
    const sender = await rendezvous.node(hub, task(job, 0), 'tcp');
    const receiver = await rendezvous.node(hub, task(job, 1), 'tcp');
    const forger = await startAgent(children, 'forger', { provider: 'tcp' });
    const key = createKey(device(sender.task), sender.endpoint.incarnation, device(receiver.task), 'weights');
    const served = nextServed(sender.mgr.find(1));
    const received = receiver.mgr.find(1).recv(key, WAIT);
    received.catch(() => {}); // asserted below
    await served;

    await forger.child.request({ cmd: 'connect', address: receiver.endpoint.address });
    const from = { from: sender.endpoint.nodeId, fromIncarnation: sender.endpoint.incarnation };
    for (let requestIndex = 0; requestIndex < GUESSES; requestIndex++) {
      const forged = encode({ kind: Kind.ErrorStatus, ...from, requestIndex, code: 'ERR_RVMA_ABORTED', message: 'forged' });
      const hex = Buffer.from(forged).toString('hex');
      await forger.child.request({ cmd: 'put', target: receiver.endpoint.address, vaddr: CONTROL_VADDR.toString(), hex });
    }
    await waitForCount(() => receiver.mgr.counters.forged, GUESSES);

    const expected = floats([16], 9);
    sender.mgr.find(1).send(key, expected);
    const { tensor } = await received;
    expect(bytesOf(tensor).equals(bytesOf(expected))).toBe(true);
    expect(receiver.mgr.counters.errors).toBe(0);
  });
});
