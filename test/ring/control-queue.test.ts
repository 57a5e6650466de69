// Control records wait for the application in a bounded queue: a member that sends them faster
// than another reads them (or one that never reads) ends the generation with a typed error
// instead of growing the reader's memory, and the ring re-forms.
import { Endpoint } from '../../src';
import { CONTROL_WAITING_MAX } from '../../src/ring/options';
import { expectRejects } from '../helpers/errors';
import { WAIT, failures, trackRings } from '../helpers/ring';

const { ringOf } = trackRings((progress, nodeId) => Endpoint.create({ nodeId, progress }));

test(`${CONTROL_WAITING_MAX} records waiting unread are kept in order; one more ends the generation typed on both sides`, async () => {
  const [r0, r1] = await ringOf(2, 'loop');
  const f0 = failures(r0);
  const f1 = failures(r1);
  for (let i = 0; i < CONTROL_WAITING_MAX; i++) await r0.sendControl({ type: 'CONTROL', body: i }, { timeout: WAIT });
  expect(r1.failure).toBeUndefined();
  expect(r1.pollControl()).toMatchObject({ record: { body: 0 }, from: 0 });
  await r0.sendControl({ type: 'CONTROL', body: 'fits again' }, { timeout: WAIT });
  await r0.sendControl({ type: 'CONTROL', body: 'one too many' }, { timeout: WAIT });

  const overflow = new RegExp(`${CONTROL_WAITING_MAX} control records wait unread here; rank 0's next one ended the generation`);
  expect((await f1.first).error.code).toBe('ERR_RVMA_OVERFLOW');
  await expectRejects(r1.recvPrev({ timeout: WAIT }), 'ERR_RVMA_OVERFLOW', overflow);
  const left = await f0.first;
  expect(left.error.code).toBe('ERR_RVMA_PEER_LOST');
  expect(left.error.message).toMatch(/it left the ring \(4096 of its control records were waiting unread/);

  // What waited is still there to read, in order; the record past the bound is not among them.
  for (let i = 1; i < CONTROL_WAITING_MAX; i++) expect(r1.pollControl()?.record).toEqual({ type: 'CONTROL', body: i });
  expect(r1.pollControl()?.record).toEqual({ type: 'CONTROL', body: 'fits again' });
  expect(r1.pollControl()).toBeUndefined();

  await Promise.all([r0.reform({ size: 2, timeout: WAIT }), r1.reform({ size: 2, timeout: WAIT })]);
  await r0.sendControl({ type: 'CONTROL', body: 'generation 1' }, { timeout: WAIT });
  expect(await r1.control({ timeout: WAIT })).toMatchObject({ record: { body: 'generation 1' }, generation: 1 });
}, 6 * WAIT);
