// One side of bench:instructions, in a process of its own: `receiver` prints its address and
// places 8-byte appends until SIGINT; `sender ADDRESS COUNT` puts COUNT counted appends after a
// fixed warm-up, WINDOW in flight, the way a user of counters would.
import { Endpoint } from '../../src';

const VADDR = 0x10000n;
const BUFFERS = 16;
const BUFFER_BYTES = 64 << 10;
export const WARMUP = 20_000;
const WINDOW = 64;
const REACH_TIMEOUT_MS = 120_000;

async function receive(): Promise<void> {
  const endpoint = await Endpoint.create({ provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
  const mailbox = endpoint.openMailbox(VADDR, { maxBuffers: BUFFERS, threshold: BUFFER_BYTES });
  for (let i = 0; i < BUFFERS; i++) mailbox.post(BUFFER_BYTES);
  process.once('SIGINT', () => process.exit(0));
  console.log(endpoint.addresses.tcp);
  for (;;) mailbox.post((await mailbox.next()).buffer);
}

async function send(address: string, count: number): Promise<void> {
  const endpoint = await Endpoint.create({ provider: 'tcp' });
  const peer = await endpoint.connect(address, { timeout: 30_000 });
  const counter = endpoint.createPutCounter();
  const data = Buffer.alloc(8, 0xa5);
  for (const n of [WARMUP, count]) {
    const end = counter.issued + n;
    while (counter.issued < end) {
      if (counter.issued - counter.settled < WINDOW) endpoint.put(peer, VADDR, data, { append: true, counter });
      else await counter.reach(counter.issued - WINDOW / 2, { timeout: REACH_TIMEOUT_MS });
    }
    await counter.reach(end, { timeout: REACH_TIMEOUT_MS });
  }
  if (counter.failed !== 0) throw new Error(`${counter.failed} puts failed: ${counter.lastError?.message}`);
  await endpoint.close();
}

const [role, address, count] = process.argv.slice(2);
(role === 'receiver' ? receive() : send(address, Number(count))).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
