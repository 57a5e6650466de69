// A receiver that closes its endpoint as soon as it sees a put still answers that put: under
// loop progress the answers of a turn leave at its end, so close() must send them first (and
// must leave nothing of that turn to run on the closed endpoint). The sender is a child process.
import { Endpoint } from '../../src';
import { startAgent, trackChildren } from '../helpers/children';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { transportCases } from '../helpers/transports';

const ROUNDS = 3;

describe.each(transportCases())('closing on a put over %s (%s progress)', (_name, progress, transport) => {
  const children = trackChildren('each');

  test('the sender learns that its put was placed', async () => {
    const agent = await startAgent(children, `sender-${progress}`, { progress, ...transport.options });
    for (let round = 0; round < ROUNDS; round++) {
      const receiver = await Endpoint.create({ nodeId: uniqueNodeId('closing'), progress, listen: transport.listen('closing'), ...transport.options });
      try {
        const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops' });
        mailbox.post(8);
        const seen = mailbox.next({ timeout: 20_000 }).then(async (c) => {
          const bytes = Buffer.from(c.buffer.subarray(0, c.bytes));
          await receiver.close(); // in the turn that saw the put
          return bytes;
        });
        expect((await agent.child.request({ cmd: 'connect', address: receiver.address })).node).toBe(receiver.nodeId);
        await agent.child.request({ cmd: 'put', target: receiver.nodeId, vaddr: VADDR.toString(), hex: `0${round}`, append: true });
        expect(await seen).toEqual(Buffer.from([round]));
        expect(receiver.closed).toBe(true);
      } finally {
        await receiver.close();
      }
    }
  });
});
