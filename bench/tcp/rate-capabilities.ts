// Whether this build of the library has sender-side put counters: the counter rows need them
// in the TypeScript layer and in the addon, which may be older than the sources.
import { Endpoint } from '../../src';
import { type RateVariant } from './rate-config';

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

/** The variants this build can run: without the counter rows (and saying why) where counters do not work. */
export async function withCountersIfBuilt(variants: RateVariant[]): Promise<RateVariant[]> {
  const noCounter = await counterUnavailable();
  if (!noCounter) return variants;
  console.log(`counter rows skipped: API not built (${noCounter})`);
  return variants.filter((v) => !v.counter);
}
