// Operations settled by a sender-side PutCounter, driven the way a user would: issue while
// fewer than `window` are unsettled, else wait until half of them have settled.
import { type PutCounter, type PutFailure } from '../../src';
import { type Measurement, type Scenario } from '../common/protocol';

/**
 * The last wait of a run: longer than this means the receiver stopped answering. The waits in
 * the loop take none (a timer each would cost more than the wait); the orchestrator's request
 * timeout bounds them.
 */
const REACH_TIMEOUT_MS = 30_000;

/** Issues n operations (issue() hands one to the counter); resolves once all have settled. */
async function counted(counter: PutCounter, n: number, window: number, issue: () => void): Promise<void> {
  const end = counter.issued + n;
  let issued = counter.issued;
  while (issued < end) {
    if (issued - counter.settled < window) {
      issue();
      issued++;
    } else await counter.reach(issued - (window >> 1));
  }
  await counter.reach(end, { timeout: REACH_TIMEOUT_MS });
}

/**
 * The scenario's warm-up (untimed), then its count timed, all on one new counter. Fails unless
 * every operation completed.
 */
export async function measureCounted(
  s: Scenario,
  create: () => PutCounter,
  issue: (counter: PutCounter) => void,
): Promise<Measurement> {
  const counter = create();
  let first: PutFailure | undefined;
  counter.on('failed', (f: PutFailure) => (first ??= f));
  try {
    const op = (): void => issue(counter);
    await counted(counter, s.warmup, s.window, op);
    const start = process.hrtime.bigint();
    await counted(counter, s.count, s.window, op);
    const elapsedNs = Number(process.hrtime.bigint() - start);
    if (counter.failed !== 0) {
      const why = first ? `; the first (#${first.index}): ${first.error.message}` : '';
      throw new Error(`${counter.failed} of ${counter.issued} counted operations failed${why}`);
    }
    return { ops: s.count, bytes: s.count * s.size, elapsedNs };
  } finally {
    counter.close();
  }
}
