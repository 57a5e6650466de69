// One endpoint holds a million open mailboxes with no per-mailbox thread or fd, at most
// 256 native bytes each while empty, and closing them gives the memory back for reuse.
import { Endpoint } from '../../src';
import { native } from '../../src/native';

const N = 1_000_000;
const BASE = 0x100000n;
// The sanitizer build allocates through ASan, which malloc statistics do not see.
const measurable = process.env.RVMA_SANITIZED !== '1';

function openAll(endpoint: Endpoint) {
  const mailboxes = new Array(N);
  for (let i = 0; i < N; i++) mailboxes[i] = endpoint.openMailbox(BASE + BigInt(i));
  return mailboxes;
}

test('1,000,000 mailboxes open and close with bounded memory', async () => {
  const endpoint = await Endpoint.create({ nodeId: 'million' });
  try {
    const before = native().heapBytes();
    let mailboxes = openAll(endpoint);
    expect(endpoint.mailboxCount).toBe(N);
    const opened = native().heapBytes();
    if (measurable) expect((opened - before) / N).toBeLessThanOrEqual(256);

    // Still a working mailbox table at this size.
    const last = mailboxes[N - 1];
    last.post(4);
    await endpoint.put(endpoint, BASE + BigInt(N - 1), Buffer.from('done'));
    expect((await last.next({ timeout: 5000 })).bytes).toBe(4);

    for (const mailbox of mailboxes) mailbox.close();
    expect(endpoint.mailboxCount).toBe(0);

    // A second round reuses what the first one left (slots, buckets): no growth.
    mailboxes = openAll(endpoint);
    const reopened = native().heapBytes();
    for (const mailbox of mailboxes) mailbox.close();
    if (measurable) expect(reopened - opened).toBeLessThan(N * 16);
  } finally {
    await endpoint.close();
  }
}, 120_000);
