// Counted puts from many processes into one mailbox over tcp: 16 sender processes, each with
// one PutCounter, append 8-byte records into an ops-counted mailbox of the test process. Every
// record must land exactly once, and every sender's counter must count every put as completed.
import { Endpoint, type ProgressMode } from '../../src';
import { startAgent, trackChildren } from '../helpers/children';
import { RECORD_BYTES, RecordTally } from '../helpers/counted';
import { VADDR, uniqueNodeId } from '../helpers/endpoints';
import { SANITIZED } from '../helpers/transports';

const SENDERS = 16;
// Under ASan (npm run test:asan) everything runs several times slower.
const PUTS_PER_SENDER = SANITIZED ? 10_000 : 100_000;
const TIMEOUT = SANITIZED ? 480_000 : 240_000;
const MODES: ProgressMode[] = ['loop', 'thread'];

describe.each(MODES)(`counted appends from ${SENDERS} processes over tcp (%s progress)`, (progress) => {
  const children = trackChildren('each');
  let endpoint: Endpoint | undefined;

  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  test(
    `${SENDERS} processes x ${PUTS_PER_SENDER} counted 8-byte appends into one mailbox: every record exactly once, every counter exact`,
    async () => {
      endpoint = await Endpoint.create({ nodeId: uniqueNodeId('sink'), progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
      const total = SENDERS * PUTS_PER_SENDER;
      // One buffer exactly as large as all records: a lost or duplicated put shows up as a
      // wrong count, an out-of-bounds refusal, or a record seen twice.
      const mailbox = endpoint.openMailbox(VADDR, { epoch: 'ops', threshold: BigInt(total) });
      const buffer = mailbox.post(total * RECORD_BYTES);

      const agents = await Promise.all(
        Array.from({ length: SENDERS }, (_, s) => startAgent(children, `sender-${s}`, { progress, provider: 'tcp' })),
      );
      // Connect everyone first, then start together, so the appends really interleave.
      await Promise.all(agents.map((a) => a.child.request({ cmd: 'connect', address: endpoint!.address }, 30_000)));
      const replies = await Promise.all(
        agents.map((a, s) =>
          a.child.request(
            { cmd: 'countedRecords', target: endpoint!.address, vaddr: VADDR.toString(), sender: s, count: PUTS_PER_SENDER, window: 256, timeout: 60_000 },
            TIMEOUT,
          ),
        ),
      );
      for (const reply of replies) {
        expect({ issued: reply.issued, completed: reply.completed, failed: reply.failed, codes: reply.codes }).toEqual({
          issued: PUTS_PER_SENDER,
          completed: PUTS_PER_SENDER,
          failed: 0,
          codes: {},
        });
      }

      const done = await mailbox.next({ timeout: 30_000 });
      expect(done).toMatchObject({ epoch: 1, bufferIndex: 0, ops: total, bytes: total * RECORD_BYTES });
      expect(done.buffer).toBe(buffer);
      const tally = new RecordTally(SENDERS, PUTS_PER_SENDER);
      tally.add(done.buffer, done.bytes);
      expect({ total: tally.total, duplicates: tally.duplicates, corrupt: tally.corrupt }).toEqual({ total, duplicates: 0, corrupt: 0 });
      expect(Array.from({ length: SENDERS }, (_, s) => tally.missing(s))).toEqual(Array(SENDERS).fill(0));
    },
    TIMEOUT,
  );
});
