// Memory per open, empty mailbox: native heap (malloc statistics), JS heap and RSS, for
// one endpoint holding a million mailboxes. Run with: npm run bench:memory
import { Endpoint } from '../../src';
import { native } from '../../src/native';

const COUNT = Number(process.env.RVMA_BENCH_MAILBOXES ?? 1_000_000);

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function main(): Promise<void> {
  const endpoint = await Endpoint.create();
  gc();
  const before = { native: native().heapBytes(), ...process.memoryUsage() };
  const began = performance.now();
  const mailboxes = new Array(COUNT);
  for (let i = 0; i < COUNT; i++) mailboxes[i] = endpoint.openMailbox(0x100000n + BigInt(i));
  const openMs = performance.now() - began;
  gc();
  const after = { native: native().heapBytes(), ...process.memoryUsage() };
  const per = (a: number, b: number) => ((a - b) / COUNT).toFixed(1);
  console.log(`${COUNT} mailboxes opened in ${openMs.toFixed(0)} ms`);
  console.log(`native heap per mailbox: ${per(after.native, before.native)} B (budget 256 B)`);
  console.log(`JS heap per mailbox:     ${per(after.heapUsed, before.heapUsed)} B`);
  console.log(`RSS per mailbox:         ${per(after.rss, before.rss)} B`);
  for (const mailbox of mailboxes) mailbox.close();
  gc();
  console.log(`native heap per mailbox after closing all: ${per(native().heapBytes(), before.native)} B (kept for reuse)`);
  await endpoint.close();
}

void main();
