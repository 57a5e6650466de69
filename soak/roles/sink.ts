// A many-to-one receiver: one mailbox with ops epochs that every sender appends records into.
// For each retired buffer it checks the epoch (its number follows the last, its counts equal the
// whole records the buffer holds) and reports which puts arrived; a timer ends the current epoch
// early (incEpoch) so that arrivals are reported within a fraction of a second.
import { type Mailbox } from '../../src';
import type { Completion } from '../../src';
import { RECORDS_PER_BUFFER, SINK_BUFFER_BYTES, SINK_VADDR, parseBuffer, toRuns } from '../records';
import { codeOf, config, failure, heartbeat, memoryEndpoint, onStop, report, startRole } from './common';

const POSTED = 32;
const FLUSH_MS = 200;
const REPORT_MS = 250;

const stats = { completions: 0, emptyEpochs: 0, records: 0, bytes: 0, strayWords: 0, corruptRecords: 0, epochMismatches: 0 };
const pending = new Map<string, { sender: number; incarnation: number; seqs: number[] }>();
let lastEpoch = 0;
let lastBufferIndex = -1;

function flushArrivals(): void {
  if (!pending.size) return;
  const streams = [...pending.values()].map((s) => ({ sender: s.sender, incarnation: s.incarnation, runs: toRuns(s.seqs) }));
  pending.clear();
  report({ type: 'arrivals', streams });
}

function take(mailbox: Mailbox, c: Completion): void {
  stats.completions++;
  if (c.epoch !== lastEpoch + 1 || c.bufferIndex !== lastBufferIndex + 1) {
    stats.epochMismatches++;
    report({
      type: 'violation',
      check: 'epochs',
      detail: `${config.role}#${config.incarnation}: completion epoch ${c.epoch} buffer ${c.bufferIndex} after epoch ${lastEpoch} buffer ${lastBufferIndex}`,
    });
  }
  lastEpoch = c.epoch;
  lastBufferIndex = c.bufferIndex;
  const parsed = parseBuffer(c.buffer);
  stats.strayWords += parsed.strayWords;
  stats.corruptRecords += parsed.corrupt;
  if (parsed.records.length !== c.ops || parsed.bytes !== c.bytes) {
    stats.epochMismatches++;
    report({
      type: 'violation',
      check: 'epochs',
      detail:
        `${config.role}#${config.incarnation} epoch ${c.epoch}: counted ${c.ops} ops / ${c.bytes} bytes, ` +
        `the buffer holds ${parsed.records.length} whole records / ${parsed.bytes} bytes (${parsed.corrupt} corrupt, ${parsed.strayWords} stray words)`,
    });
  }
  if (c.ops === 0) stats.emptyEpochs++;
  for (const r of parsed.records) {
    if (r.sink !== config.index) {
      report({ type: 'violation', check: 'exactly-once', detail: `${config.role}: a record meant for sink ${r.sink} landed here (sender ${r.sender}#${r.incarnation} seq ${r.seq})` });
      continue;
    }
    const id = `${r.sender}/${r.incarnation}`;
    let s = pending.get(id);
    if (!s) pending.set(id, (s = { sender: r.sender, incarnation: r.incarnation, seqs: [] }));
    s.seqs.push(r.seq);
    stats.records++;
  }
  stats.bytes += parsed.bytes;
  c.buffer.fill(0); // a stale record must not be read again from the next epoch
  mailbox.post(c.buffer);
}

async function main(): Promise<void> {
  startRole();
  const { endpoint } = await memoryEndpoint('auto');
  const mailbox = endpoint.openMailbox(SINK_VADDR, { epoch: 'ops', threshold: RECORDS_PER_BUFFER, maxBuffers: POSTED * 2 });
  for (let i = 0; i < POSTED; i++) mailbox.post(SINK_BUFFER_BYTES);
  heartbeat(() => stats.completions, () => ({ ...stats }));

  let stopping = false;
  const flush = setInterval(() => {
    try {
      mailbox.incEpoch();
    } catch (error) {
      // Every posted buffer has ended its epoch and waits to retire: nothing to end.
      if (codeOf(error) !== 'ERR_RVMA_NO_BUFFER') failure('sink-flush', error);
    }
  }, FLUSH_MS);
  const reporting = setInterval(flushArrivals, REPORT_MS);

  const loop = (async () => {
    for (;;) {
      let c: Completion;
      try {
        c = await mailbox.next({ timeout: stopping ? 1500 : 1000 });
      } catch (error) {
        const code = codeOf(error);
        if (code === 'ERR_RVMA_TIMEOUT') {
          if (stopping) return; // drained: senders have settled every put
          continue;
        }
        if (code === 'ERR_RVMA_CLOSED') return;
        failure('sink-next', error);
        continue;
      }
      take(mailbox, c);
    }
  })();

  onStop(async () => {
    stopping = true;
    clearInterval(flush);
    try {
      mailbox.incEpoch();
    } catch {
      // nothing open
    }
    await loop;
    clearInterval(reporting);
    flushArrivals();
    await endpoint.close();
  });
  await loop;
}

void main();
