// The verbs provider over real rdma-core: Soft-RoCE (rxe0) in the QEMU guest of
// scripts/rdma-vm. Both endpoints listen on the rxe netdev's address; puts name the peer by
// its rdma:// address. Run with `npm run test:rdma`; elsewhere this file only reports a skip.
import { hostname } from 'node:os';
import { Endpoint, type ProgressMode } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';
import { asBuffer, makeRecord, parseRecords, pattern } from '../helpers/data';
import { expectRejects } from '../helpers/errors';
import { EAGER_MAX, RDMA_ADDR, describeInGuest, verbsEndpoint } from '../helpers/verbs';

const ADDR = RDMA_ADDR;
const endpoints = trackEndpoints();

function verbs(progress: ProgressMode): Promise<Endpoint> {
  return verbsEndpoint(endpoints, progress);
}

async function pair(progress: ProgressMode): Promise<{ receiver: Endpoint; sender: Endpoint }> {
  const receiver = await verbs(progress);
  const sender = await verbs(progress);
  return { receiver, sender };
}

describeInGuest('verbs provider', () => {
  jest.setTimeout(180_000);

  describe('verbs provider: setup', () => {
    test('capabilities list verbs and an active device', () => {
      const caps = Endpoint.capabilities;
      expect(caps.rdmaCore).toBe(true);
      expect(caps.providers).toContain('verbs');
      expect(caps.devices.some((d) => d.activePorts > 0)).toBe(true);
    });

    test('listens at rdma://IP:PORT and reports the bound port', async () => {
      const endpoint = await verbs('loop');
      expect(endpoint.address).toMatch(new RegExp(`^rdma://${ADDR.replace(/\./g, '\\.')}:[1-9]\\d*$`));
    });

    test('a listen address on no RDMA device is refused at create', async () => {
      await expectRejects(
        Endpoint.create({ nodeId: uniqueNodeId(), provider: 'verbs', listen: 'rdma://10.77.0.99:0' }),
        'ERR_RVMA_INVALID_ARGUMENT',
      );
    });

    test("provider 'auto' with an rdma:// listen address runs verbs where a device is up", async () => {
      const receiver = await endpoints.create({ provider: 'auto', listen: `rdma://${ADDR}:0` });
      expect(receiver.address).toMatch(/^rdma:\/\//);
      expect(receiver.verbsFallback).toBeUndefined();
      const mailbox = receiver.openMailbox(VADDR);
      mailbox.post(EAGER_MAX + 1);
      const data = pattern(EAGER_MAX + 1, 3);
      await (await verbs('loop')).put(receiver.address, VADDR, data, { timeout: 30_000 });
      expect(asBuffer((await mailbox.next({ timeout: 30_000 })).buffer).equals(data)).toBe(true);
      expect(receiver.registrationStats()).toMatchObject({ registrations: 1 });
    });

    test('a wildcard listen address is reported and published under the host name', async () => {
      const endpoint = await endpoints.create({ provider: 'verbs', listen: 'rdma://0.0.0.0:0' });
      const port = /^rdma:\/\/0\.0\.0\.0:([1-9]\d*)$/.exec(endpoint.boundAddress)?.[1];
      expect(port).toBeDefined();
      expect(endpoint.address).toBe(`rdma://${hostname()}:${port}`);
      const record = await endpoint.directory.resolveNode(endpoint.nodeId);
      expect(record?.addresses).toEqual({ rdma: `rdma://${hostname()}:${port}` });
    });
  });

  describe('verbs provider: routes from the directory', () => {
    test('a node id, a label and a bound name reach the node at its published rdma address, only that incarnation', async () => {
      const label = `/job:${uniqueNodeId('route')}/replica:0/task:0`;
      const receiver = await verbsEndpoint(endpoints, 'loop', { labels: [label] });
      const sender = await verbs('loop');
      expect(await receiver.directory.resolveNode(receiver.nodeId)).toMatchObject({ addresses: { rdma: receiver.address } });
      const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 3 });
      mailbox.post(3 * 64);
      const name = uniqueNodeId('name');
      await receiver.bindName(name, VADDR);
      const data = [pattern(64, 1), pattern(64, 2), pattern(64, 3)];
      await sender.put(receiver.nodeId, VADDR, data[0], { offset: 0 });
      await sender.put(label, VADDR, data[1], { offset: 64 });
      await sender.putNamed(name, data[2], { offset: 128 });
      const done = await mailbox.next({ timeout: 30_000 });
      expect(done).toMatchObject({ ops: 3, bytes: 192 });
      expect(asBuffer(done.buffer).equals(Buffer.concat(data))).toBe(true);
      // The route names the incarnation: once that endpoint is gone, so is the node.
      await receiver.close();
      await expectRejects(sender.put(receiver.nodeId, VADDR, data[0], { timeout: 30_000 }), 'ERR_RVMA_PEER_LOST');
    });
  });

  describe.each(PROGRESS_MODES)('verbs provider (%s progress)', (progress) => {
    test('exact bytes, eager and large (READ), 1 B .. 4 MiB', async () => {
      const { receiver, sender } = await pair(progress);
      const sizes = [1, 7, 4096, EAGER_MAX, EAGER_MAX + 1, 65536, 1 << 20, (3 << 20) + 7, 4 << 20];
      for (const [i, size] of sizes.entries()) {
        const vaddr = VADDR + BigInt(i);
        const mailbox = receiver.openMailbox(vaddr);
        const posted = mailbox.post(size);
        const data = pattern(size, i + 1);
        await sender.put(receiver.address, vaddr, data);
        const done = await mailbox.next({ timeout: 60_000 });
        expect(done.buffer).toBe(posted);
        expect(done).toMatchObject({ bytes: size, ops: 1 });
        expect(asBuffer(done.buffer).equals(data)).toBe(true);
      }
    });

    test('gathered [head, data] puts land as one payload: eager (gathered into the slot), large (the head in the RTS, the rest READ), long heads (joined)', async () => {
      const { receiver, sender } = await pair(progress);
      // Eager; large with a head of 1, 100 and 456 bytes (the most an RTS carries); a head of
      // 457 bytes, and one that is the whole put (joined).
      const shapes: [number, number][] = [[8, 16], [24, EAGER_MAX - 24], [4096, 0], [1, EAGER_MAX], [24, EAGER_MAX], [100, 1 << 20], [456, 1 << 20], [457, 1 << 20], [EAGER_MAX + 8, 0]];
      for (const [i, [headLen, dataLen]] of shapes.entries()) {
        const vaddr = VADDR + 100n + BigInt(i);
        const mailbox = receiver.openMailbox(vaddr);
        mailbox.post(headLen + dataLen);
        const head = pattern(headLen, 2 * i + 1);
        const data = pattern(dataLen, 2 * i + 2);
        await sender.put(receiver.address, vaddr, [head, data]);
        const done = await mailbox.next({ timeout: 60_000 });
        expect(done).toMatchObject({ bytes: headLen + dataLen, ops: 1 });
        expect(asBuffer(done.buffer).equals(Buffer.concat([head, data]))).toBe(true);
      }
    });

    test('concurrent eager and large puts at offsets fill one buffer exactly', async () => {
      const { receiver, sender } = await pair(progress);
      const size = 2 << 20;
      const mailbox = receiver.openMailbox(VADDR);
      mailbox.post(size);
      const expected = pattern(size, 9);
      const cuts = [0, 10, 5000, 5000 + EAGER_MAX, 300_000, 1 << 20, size - 1, size];
      await Promise.all(
        cuts.slice(1).map((end, i) => sender.put(receiver.address, VADDR, expected.subarray(cuts[i], end), { offset: cuts[i] })),
      );
      const done = await mailbox.next({ timeout: 60_000 });
      expect(done).toMatchObject({ bytes: size, ops: cuts.length - 1 });
      expect(asBuffer(done.buffer).equals(expected)).toBe(true);
    });

    test('epochs: ops thresholds retire buffers in order, more puts than ring slots', async () => {
      const { receiver, sender } = await pair(progress);
      const mailbox = receiver.openMailbox(VADDR, { epoch: 'ops', threshold: 50, maxBuffers: 4 });
      for (let b = 0; b < 4; b++) mailbox.post(50 * 8);
      const puts: Promise<void>[] = [];
      for (let i = 0; i < 200; i++) {
        const rec = Buffer.alloc(8);
        rec.writeUInt32LE(i, 0);
        puts.push(sender.put(receiver.address, VADDR, rec, { append: true }));
      }
      await Promise.all(puts);
      const seen = new Set<number>();
      for (let e = 1; e <= 4; e++) {
        const done = await mailbox.next({ timeout: 30_000 });
        expect(done).toMatchObject({ epoch: e, bufferIndex: e - 1, ops: 50, bytes: 400 });
        const view = asBuffer(done.buffer);
        for (let k = 0; k < 50; k++) seen.add(view.readUInt32LE(k * 8));
      }
      expect(seen.size).toBe(200);
    });

    test('append many-to-one: every record lands once, packed', async () => {
      const receiver = await verbs(progress);
      const senders = [await verbs(progress), await verbs(progress), await verbs(progress)];
      const perSender = 60;
      const records = [];
      for (let seq = 0; seq < perSender; seq++) for (let s = 0; s < senders.length; s++) records.push({ s, seq, data: makeRecord(s, seq) });
      const total = records.reduce((n, r) => n + r.data.length, 0);
      const mailbox = receiver.openMailbox(VADDR, { threshold: total });
      mailbox.post(total);
      await Promise.all(records.map((r) => senders[r.s].put(receiver.address, VADDR, r.data, { append: true })));
      const done = await mailbox.next({ timeout: 30_000 });
      expect(done).toMatchObject({ bytes: total, ops: records.length });
      const parsed = parseRecords(done.buffer, total);
      expect(parsed.errors).toEqual([]);
      expect(parsed.keys.sort()).toEqual(records.map((r) => `${r.s}:${r.seq}`).sort());
    });

    test('refusals reach the sender typed, eager and large alike', async () => {
      const { receiver, sender } = await pair(progress);
      const to = receiver.address;
      const small = Buffer.alloc(100, 1);
      const big = Buffer.alloc(256 * 1024, 2);
      await expectRejects(sender.put(to, VADDR, small), 'ERR_RVMA_NO_MAILBOX');
      await expectRejects(sender.put(to, VADDR, big), 'ERR_RVMA_NO_MAILBOX');
      const mailbox = receiver.openMailbox(VADDR);
      await expectRejects(sender.put(to, VADDR, small), 'ERR_RVMA_NO_BUFFER');
      await expectRejects(sender.put(to, VADDR, big), 'ERR_RVMA_NO_BUFFER');
      mailbox.post(128 * 1024);
      await expectRejects(sender.put(to, VADDR, small, { offset: 128 * 1024 - 50 }), 'ERR_RVMA_OUT_OF_BOUNDS');
      await expectRejects(sender.put(to, VADDR, big), 'ERR_RVMA_TOO_LARGE');
      await expectRejects(sender.put(to, VADDR, big.subarray(0, 100_000), { offset: 100_000 }), 'ERR_RVMA_OUT_OF_BOUNDS');
      // Nothing was counted by the refused puts: a full fill still ends the epoch exactly.
      const data = pattern(128 * 1024, 3);
      await sender.put(to, VADDR, data);
      const done = await mailbox.next({ timeout: 30_000 });
      expect(done).toMatchObject({ bytes: 128 * 1024, ops: 1 });
      expect(asBuffer(done.buffer).equals(data)).toBe(true);
    });

    test('peer loss: closing the receiver fails the sender side with PEER_LOST / NO_PEER', async () => {
      const { receiver, sender } = await pair(progress);
      const mailbox = receiver.openMailbox(VADDR);
      mailbox.post(64);
      await sender.put(receiver.address, VADDR, Buffer.alloc(64, 5));
      await mailbox.next({ timeout: 30_000 });
      const lost = new Promise<{ nodeId: string }>((resolve) => sender.once('peerLost', resolve));
      const address = receiver.address;
      await receiver.close();
      expect((await lost).nodeId).toBe(receiver.nodeId);
      // By incarnation: that node is gone. By address: nobody listens there any more.
      await expectRejects(sender.put(receiver, VADDR, Buffer.alloc(8)), 'ERR_RVMA_PEER_LOST');
      await expectRejects(sender.put(address, VADDR, Buffer.alloc(8)), 'ERR_RVMA_NO_PEER');
    });
  });
});
