// The steps a manager remembers as cleaned up (a late request for one is refused): the last
// 4096 of them, the oldest forgotten first, a step cleaned twice remembered once.
import { Rendezvous, type RendezvousHost } from '../../src/rendezvous/rendezvous';
import { Steps } from '../../src/rendezvous/steps';

const KEPT = 4096;
const host = {} as RendezvousHost; // no step below sends, receives or aborts

test('the last 4096 cleaned steps are remembered, the oldest forgotten first', () => {
  const steps = new Steps(host);
  for (let s = 1n; s <= BigInt(KEPT); s++) steps.cleanUp(s);
  expect(steps.wasCleaned(1n)).toBe(true);
  steps.cleanUp(BigInt(KEPT) + 1n);
  expect(steps.wasCleaned(1n)).toBe(false);
  expect(steps.wasCleaned(2n)).toBe(true);
  // Cleaned again: not a new entry, so nothing older is pushed out by it.
  steps.cleanUp(5n);
  expect(steps.wasCleaned(2n)).toBe(true);
  for (let s = BigInt(KEPT) + 2n; s <= 3n * BigInt(KEPT); s++) steps.cleanUp(s);
  const remembered = Array.from({ length: 3 * KEPT + 1 }, (_, i) => BigInt(i)).filter((s) => steps.wasCleaned(s));
  expect(remembered).toEqual(Array.from({ length: KEPT }, (_, i) => BigInt(2 * KEPT + 1 + i)));
});

test('cleanUp forgets the step and returns its rendezvous once', () => {
  const steps = new Steps(host);
  const rendezvous = steps.of(7n);
  expect(rendezvous).toBeInstanceOf(Rendezvous);
  expect(steps.of(7n)).toBe(rendezvous);
  expect(steps.cleanUp(7n)).toBe(rendezvous);
  expect(steps.cleanUp(7n)).toBeUndefined();
  expect(steps.size).toBe(0);
  expect(steps.wasCleaned(7n)).toBe(true);
});
