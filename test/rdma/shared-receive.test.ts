// The verbs provider's shared receive queue: every connection receives into one pool of
// `receiveDepth` buffers. With 8 of them, a few senders run it dry; their devices retry (RNR)
// until the receiver re-posts, and nothing is lost. Buffers held by a peer that dies come
// back. Real processes (test/fixtures/agent.js); runs inside the Soft-RoCE guest only.
import { type Agent, provenConnection, seededBytes, startAgent, trackChildren, waitFor, waitStopped } from '../helpers/children';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { asBuffer, parseRecords, recordLength } from '../helpers/data';
import { RDMA_ADDR, describeInGuest, rnrNaksSent, verbsEndpoint } from '../helpers/verbs';

const endpoints = trackEndpoints();
const LISTEN = `rdma://${RDMA_ADDR}:0`;
const WAIT = 60_000; // bounds each wait; a guest runs JavaScript ~8x slower than the host
const RECEIVE_DEPTH = 8;
const RECORDS = 300; // append puts per sender and burst
const LARGE = 65536; // read by the receiver: an RTS and a FIN, both control messages
const LARGE_PUTS = 8; // per sender

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const recordBytes = (sender: number) => range(RECORDS).reduce((n, seq) => n + recordLength(sender, seq), 0);
const recordKeys = (sender: number) => range(RECORDS).map((seq) => `${sender}:${seq}`);

/** A mailbox at the receiver agent whose one buffer ends its epoch when `sender`'s records fill it. */
async function openForRecords(receiver: Agent, vaddr: bigint, sender: number): Promise<void> {
  await receiver.child.request({ cmd: 'open', vaddr: vaddr.toString() });
  await receiver.child.request({ cmd: 'post', vaddr: vaddr.toString(), size: recordBytes(sender) });
}

/** RECORDS append puts of `sender`'s records from an agent, up to 64 in flight. */
function appendRecords(from: Agent, target: string, vaddr: bigint, sender: number) {
  const command = { cmd: 'appendRecords', target, vaddr: vaddr.toString(), sender, count: RECORDS, window: 64 };
  return from.child.request({ ...command, timeout: WAIT }, WAIT);
}

/** Every record of `sender` in the mailbox's first buffer, once, intact. */
async function expectRecords(receiver: Agent, vaddr: bigint, sender: number): Promise<void> {
  const v = vaddr.toString();
  const bytes = recordBytes(sender);
  expect(await receiver.child.request({ cmd: 'next', vaddr: v, timeout: WAIT }, WAIT)).toMatchObject({ epoch: 1, bytes, ops: RECORDS });
  const { hex } = await receiver.child.request({ cmd: 'read', vaddr: v, start: 0, end: bytes });
  const parsed = parseRecords(Buffer.from(hex as string, 'hex'), bytes);
  expect(parsed.errors).toEqual([]);
  expect(parsed.keys.sort()).toEqual(recordKeys(sender).sort());
}

describeInGuest('verbs shared receive queue', () => {
  jest.setTimeout(240_000);
  const children = trackChildren('each');

  describe.each(PROGRESS_MODES)('%s progress', (progress) => {
    test(`three sender processes run ${RECEIVE_DEPTH} receive buffers dry with hundreds of small and large puts; every byte and count is exact`, async () => {
      const receiver = await verbsEndpoint(endpoints, progress, { verbs: { receiveDepth: RECEIVE_DEPTH } });
      const senders = await Promise.all(range(3).map((i) => startAgent(children, `sender-${i}-${progress}`, { progress, provider: 'verbs' })));
      const total = range(3).reduce((n, i) => n + recordBytes(i), 0);
      const small = receiver.openMailbox(VADDR, { threshold: total });
      small.post(total);
      const large = receiver.openMailbox(VADDR + 1n, { epoch: 'ops', threshold: 3 * LARGE_PUTS });
      large.post(3 * LARGE_PUTS * LARGE);

      const before = rnrNaksSent();
      await Promise.all(
        senders.flatMap((sender, i) => [
          appendRecords(sender, receiver.address, VADDR, i),
          ...range(LARGE_PUTS).map((k) => {
            const part = i * LARGE_PUTS + k;
            const put = { cmd: 'put', target: receiver.address, vaddr: (VADDR + 1n).toString(), size: LARGE, seed: part, offset: part * LARGE };
            return sender.child.request({ ...put, timeout: WAIT }, WAIT);
          }),
        ]),
      );
      // The queue did run dry (the receiver's device turned puts away), and the retries got through.
      expect(rnrNaksSent()).toBeGreaterThan(before);

      const done = await small.next({ timeout: WAIT });
      expect(done).toMatchObject({ bytes: total, ops: 3 * RECORDS });
      const parsed = parseRecords(done.buffer, total);
      expect(parsed.errors).toEqual([]);
      expect(parsed.keys.sort()).toEqual(range(3).flatMap(recordKeys).sort());
      const big = await large.next({ timeout: WAIT });
      expect(big).toMatchObject({ bytes: 3 * LARGE_PUTS * LARGE, ops: 3 * LARGE_PUTS });
      expect(asBuffer(big.buffer).equals(Buffer.concat(range(3 * LARGE_PUTS).map((part) => seededBytes(LARGE, part))))).toBe(true);
    });

    test('a sender killed (kill -9) while its puts hold every receive buffer: they come back, the other senders complete, and so does a later burst', async () => {
      // Nobody pings or gives up on the receiver while it is stopped.
      const patient = { keepaliveMs: 30_000, peerTimeoutMs: 60_000 };
      const receiver = await startAgent(children, `receiver-${progress}`, {
        progress,
        provider: 'verbs',
        listen: LISTEN,
        verbs: { receiveDepth: RECEIVE_DEPTH, ...patient },
      });
      const senders = await Promise.all(
        range(3).map((i) => startAgent(children, `sender-${i}-${progress}`, { progress, provider: 'verbs', verbs: patient })),
      );
      for (const [i, sender] of senders.entries()) await provenConnection(sender, receiver, VADDR + 10n + BigInt(i));
      const [victim, ...survivors] = senders;
      // The victim's records land at VADDR (never filling its buffer), the survivors' at VADDR + 1 + i.
      await receiver.child.request({ cmd: 'open', vaddr: VADDR.toString() });
      await receiver.child.request({ cmd: 'post', vaddr: VADDR.toString(), size: 65536 });
      for (const i of survivors.keys()) await openForRecords(receiver, VADDR + 1n + BigInt(i), i + 1);

      // Stopped, the receiver re-posts nothing: the victim's first puts take all 8 buffers, and
      // the receiver's device turns the next ones away. Only the victim sends meanwhile.
      receiver.child.signal('SIGSTOP');
      await waitStopped(receiver.child.pid);
      const before = rnrNaksSent();
      await victim.child.request({ cmd: 'startRecords', target: receiver.address, vaddr: VADDR.toString(), sender: 0, count: 1000, window: 64 });
      await waitFor('the stopped receiver turning puts away', async () => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        return rnrNaksSent() > before;
      }, WAIT);
      const first = survivors.map((sender, i) => appendRecords(sender, receiver.address, VADDR + 1n + BigInt(i), i + 1));
      await victim.child.kill();
      receiver.child.signal('SIGCONT');

      await Promise.all(first);
      await receiver.child.next((m) => m.type === 'peerLost' && m.nodeId === victim.nodeId, WAIT);
      for (const i of survivors.keys()) await expectRecords(receiver, VADDR + 1n + BigInt(i), i + 1);

      // Every buffer is back: another burst from both survivors completes as well.
      for (const i of survivors.keys()) await openForRecords(receiver, VADDR + 3n + BigInt(i), i + 3);
      await Promise.all(survivors.map((sender, i) => appendRecords(sender, receiver.address, VADDR + 3n + BigInt(i), i + 3)));
      for (const i of survivors.keys()) await expectRecords(receiver, VADDR + 3n + BigInt(i), i + 3);
    });
  });
});
