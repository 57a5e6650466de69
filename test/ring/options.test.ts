// Ring.join's defaults: slots follow frameBytes (about 1 MiB per direction, 16 to 64 slots).
import { parseJoinOptions } from '../../src/ring/options';

const CALL = 'Ring.join';

describe('Ring.join options', () => {
  test('about 1 MiB of frames per direction: 64 slots for 16 KiB frames, 16 from 64 KiB', () => {
    expect(parseJoinOptions(CALL, { group: 'g' }).ring).toMatchObject({ slots: 16, frameBytes: 65536 });
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 16392 }).ring.slots).toBe(64);
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 1024 }).ring.slots).toBe(64);
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 32768 }).ring.slots).toBe(32);
    expect(parseJoinOptions(CALL, { group: 'g', frameBytes: 1 << 20 }).ring.slots).toBe(16);
  });

  test('slots given are kept, whatever the frame size', () => {
    expect(parseJoinOptions(CALL, { group: 'g', slots: 3 }).ring.slots).toBe(3);
    expect(parseJoinOptions(CALL, { group: 'g', slots: 200, frameBytes: 1 << 20 }).ring.slots).toBe(200);
  });
});
