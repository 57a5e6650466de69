// MailboxOptions.reportSender: each completion names the node whose put was last admitted to
// the retired buffer (for ops epochs of threshold 1, the put's own node), over loopback and
// tcp; without the option completions carry no sender.
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { expectThrows } from '../helpers/errors';

const tracker = trackEndpoints();
const WAIT = { timeout: 10_000 };

describe.each(PROGRESS_MODES)('reportSender (%s progress)', (progress) => {
  test.each(['loopback', 'tcp'] as const)('over %s: each one-put epoch names its sender, in arrival order', async (provider) => {
    const listen = provider === 'tcp' ? { listen: 'tcp://127.0.0.1:0' } : {};
    const receiver = await tracker.create({ nodeId: uniqueNodeId('owner'), progress, provider, ...listen });
    const senders = [
      await tracker.create({ nodeId: uniqueNodeId('alice'), progress, provider, ...listen }),
      await tracker.create({ nodeId: uniqueNodeId('bob'), progress, provider, ...listen }),
    ];
    const named = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 1, reportSender: true });
    const plain = receiver.openMailbox(VADDR + 1n, { epoch: 'ops', threshold: 1 });
    for (let i = 0; i < 4; i++) named.post(8);
    plain.post(8);
    const target = provider === 'tcp' ? receiver.address : receiver.nodeId;
    for (const [i, s] of [senders[0], senders[1], senders[1], senders[0]].entries()) {
      await s.put(target, VADDR, Buffer.from(`put ${i}...`), WAIT);
    }
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push((await named.next(WAIT)).sender);
    expect(seen).toEqual([senders[0], senders[1], senders[1], senders[0]].map((s) => s.nodeId));
    await senders[0].put(target, VADDR + 1n, Buffer.from('no name'), WAIT);
    expect((await plain.next(WAIT)).sender).toBeUndefined();
  });

  test('reportSender must be a boolean', async () => {
    const endpoint = await tracker.create({ progress, provider: 'loopback' });
    expectThrows(() => endpoint.openMailbox(VADDR, { reportSender: 'yes' as never }), 'ERR_RVMA_INVALID_ARGUMENT', /reportSender must be a boolean/);
  });
});
