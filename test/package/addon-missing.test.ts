// An application whose addon is neither prebuilt for its machine nor compiled (its install script
// blocked): the first use says what to run and what compiling needs. A fresh copy of the
// library's modules, so that the addon this process loaded already is not in the way.
import * as path from 'node:path';

test('an addon that is nowhere: ERR_RVMA_NATIVE_UNAVAILABLE naming the approval, the rebuild and the system packages', async () => {
  const saved = process.env.RVMA_ADDON;
  process.env.RVMA_ADDON = path.join(__dirname, 'no-such-dir', 'rvma.node');
  try {
    let lib!: typeof import('../../src');
    jest.isolateModules(() => {
      lib = require('../../src') as typeof import('../../src');
    });
    const error = await lib.Endpoint.create().then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(error?.code).toBe('ERR_RVMA_NATIVE_UNAVAILABLE');
    expect(error?.message).toContain('npm install-scripts approve rvma');
    expect(error?.message).toContain('npm rebuild rvma');
    expect(error?.message).toContain('libssl-dev');
  } finally {
    if (saved === undefined) delete process.env.RVMA_ADDON;
    else process.env.RVMA_ADDON = saved;
  }
});
