// Ring.join's defaults: slots follow frameBytes (deep for small frames, a few MiB for large ones).
import { parseJoinOptions } from '../../src/ring/options';

const CALL = 'Ring.join';

describe('Ring.join options', () => {
  test('64 slots per direction for frames up to 64 KiB, 16 above', () => {
    expect(parseJoinOptions(CALL, { group: 'g' }).ring).toMatchObject({ slots: 64, frameBytes: 65536 });
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 16392 }).ring.slots).toBe(64);
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 65537 }).ring.slots).toBe(16);
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 1 << 20 }).ring.slots).toBe(16);
  });

  test('slots given are kept, whatever the frame size', () => {
    expect(parseJoinOptions(CALL, { group: 'g', slots: 3 }).ring.slots).toBe(3);
    expect(parseJoinOptions(CALL, { group: 'g', slots: 200, frameBytes: 1 << 20 }).ring.slots).toBe(200);
  });
});
