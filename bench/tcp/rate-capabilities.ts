// Whether this build of the library has sender-side put counters: the counter rows need them
// in the TypeScript layer and in the addon, which may be older than the sources.
import { Endpoint } from '../../src';

/** undefined when counters work here; otherwise why not. */
export async function counterUnavailable(): Promise<string | undefined> {
  let endpoint: Endpoint | undefined;
  try {
    endpoint = await Endpoint.create({ provider: 'loopback' });
    if (typeof endpoint.createPutCounter !== 'function') return 'Endpoint.createPutCounter is not built';
    endpoint.createPutCounter().close();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await endpoint?.close();
  }
}
