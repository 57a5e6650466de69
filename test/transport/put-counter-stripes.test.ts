// Coalesced answers over striped tcp connections: small puts rotate over four connections to
// one node, each connection answers its own puts with runs of acks (Acks frames), and the
// sender's counter and promises must still account for every put exactly once, with every
// record placed once, whatever order the connections deliver in.
import { type Endpoint } from '../../src';
import { RECORD_BYTES, RecordTally, failuresOf, issueWindowed, record } from '../helpers/counted';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';

const endpoints = trackEndpoints();
const STRIPES = 4;
const COUNTED = 4 * 8192;
const PROMISED = 2000;

describe.each(PROGRESS_MODES)('counted and promise puts over %d tcp stripes (%s progress)', (progress) => {
  jest.setTimeout(60_000);

  test(`${COUNTED} counted and ${PROMISED} promise appends: counts exact, every record exactly once`, async () => {
    const tcp = { stripes: STRIPES };
    const receiver = await endpoints.create({ nodeId: uniqueNodeId('sink'), progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0', tcp });
    const sender: Endpoint = await endpoints.create({ nodeId: uniqueNodeId('striped'), progress, provider: 'tcp', tcp });
    const total = COUNTED + PROMISED;
    // One buffer for every record: a duplicate shows as a wrong count or a record seen twice.
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(total) });
    mailbox.post(total * RECORD_BYTES);
    expect(await sender.connect(receiver.address, { timeout: 10_000 })).toBe(receiver.nodeId);

    const counter = sender.createPutCounter();
    const failures = failuresOf(counter);
    const promises: Promise<void>[] = [];
    const state = await issueWindowed(counter, COUNTED, (seq) => {
      sender.put(receiver.address, VADDR, record(0, seq), { append: true, counter });
      // Promise puts in between, on the same connections.
      if (seq % 16 === 0 && promises.length < PROMISED) {
        promises.push(sender.put(receiver.address, VADDR, record(1, promises.length), { append: true, timeout: 30_000 }));
      }
    });
    while (promises.length < PROMISED) promises.push(sender.put(receiver.address, VADDR, record(1, promises.length), { append: true, timeout: 30_000 }));
    await Promise.all(promises);

    expect(state).toEqual({ completed: COUNTED, failed: 0 });
    expect(failures).toEqual([]);
    const done = await mailbox.next({ timeout: 30_000 });
    expect(done).toMatchObject({ ops: total, bytes: total * RECORD_BYTES });
    const tally = new RecordTally(2, COUNTED);
    tally.add(done.buffer, done.bytes);
    expect({ total: tally.total, duplicates: tally.duplicates, corrupt: tally.corrupt }).toEqual({ total, duplicates: 0, corrupt: 0 });
    expect([tally.missing(0), tally.missing(1, 0, PROMISED)]).toEqual([0, 0]);
  });
});
