// Memory lent to peers (posted buffers, regions) cannot be taken away under their writes:
// transferring its ArrayBuffer leaves it attached (Node 20 copies it instead; later versions
// throw a DataCloneError), and a resizable ArrayBuffer, which may shrink, is refused. Before,
// a transferred buffer was detached and the next put wrote memory that was freed.
import { MessageChannel } from 'node:worker_threads';
import { type Endpoint } from '../../src';
import { PROGRESS_MODES, VADDR, trackEndpoints } from '../helpers/endpoints';
import { expectThrows } from '../helpers/errors';

const endpoints = trackEndpoints();

/** Transfers buffer away, as structuredClone or postMessage would; true when that threw instead. */
function transferAway(buffer: ArrayBuffer, how: 'structuredClone' | 'postMessage'): boolean {
  try {
    if (how === 'structuredClone') {
      structuredClone(buffer, { transfer: [buffer] });
    } else {
      const { port1, port2 } = new MessageChannel();
      port1.postMessage(buffer, [buffer]);
      port1.close();
      port2.close();
    }
    return false;
  } catch (error) {
    expect((error as Error).name).toBe('DataCloneError');
    return true;
  }
}

describe.each(PROGRESS_MODES)('lent memory (%s progress)', (progress) => {
  test.each(['structuredClone', 'postMessage'] as const)('a posted buffer stays attached through %s, and the next put lands in it', async (how) => {
    const receiver = await endpoints.create({ progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
    const sender = await endpoints.create({ progress, provider: 'tcp' });
    const mailbox = receiver.openMailbox(VADDR, { epoch: 'bytes', threshold: 16n });
    const posted = mailbox.post(Buffer.alloc(64 << 10)); // JS memory, not the library's
    transferAway(posted.buffer as ArrayBuffer, how);
    expect(posted.byteLength).toBe(64 << 10);
    global.gc?.();
    const data = Buffer.from('sixteen bytes!!!');
    await sender.put(receiver.address, VADDR, data, { timeout: 10_000 });
    const done = await mailbox.next({ timeout: 10_000 });
    expect(done.buffer).toBe(posted);
    expect(Buffer.from(posted.subarray(0, 16))).toEqual(data);
  });

  test('a region stays attached through a transfer, and a raw write lands in it', async () => {
    const owner = await endpoints.create({ progress, provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
    const writer = await endpoints.create({ progress, provider: 'tcp' });
    const region = owner.registerRegion(new Uint8Array(4096));
    transferAway(region.buffer.buffer as ArrayBuffer, 'structuredClone');
    expect(region.buffer.byteLength).toBe(4096);
    await writer.rawWrite(owner.address, region.key, 100n, Buffer.from('raw'), { timeout: 10_000 });
    expect(Buffer.from(region.buffer.subarray(100, 103)).toString()).toBe('raw');
  });
});

test('memory that may shrink is refused', async () => {
  const endpoint: Endpoint = await endpoints.create({ provider: 'loopback' });
  const mailbox = endpoint.openMailbox(VADDR, { epoch: 'bytes', threshold: 64n });
  const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
  expectThrows(() => mailbox.post(new Uint8Array(new Resizable(64, { maxByteLength: 128 }))), 'ERR_RVMA_INVALID_ARGUMENT', /resizable/);
  expectThrows(() => endpoint.registerRegion(new Resizable(64, { maxByteLength: 128 })), 'ERR_RVMA_INVALID_ARGUMENT', /resizable/);
});
