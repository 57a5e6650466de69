// The providers Endpoint.create's options know: each one's address scheme and option group. The
// native side keeps the same table (native/providers/provider_kinds.cpp); a provider built
// natively but absent here runs with its defaults.
import { parseShmOptions } from './shm-options';
import { parseTcpOptions } from './tcp-options';
import { parseVerbsOptions } from './verbs-options';

interface ProviderEntry {
  /** The form of the addresses it listens at and dials, its scheme first. */
  address?: string;
  /** Checks its option group (Endpoint.create's option of the same name). */
  parse?: (call: string, options: unknown) => object;
}

export const PROVIDERS = {
  loopback: {},
  tcp: { address: 'tcp://HOST:PORT', parse: parseTcpOptions },
  shm: { address: 'shm://NAME', parse: parseShmOptions },
  verbs: { address: 'rdma://IP:PORT', parse: parseVerbsOptions },
} as const satisfies Record<string, ProviderEntry>;

export type ProviderName = 'auto' | keyof typeof PROVIDERS;

const ADDRESSED = Object.entries(PROVIDERS as Record<string, ProviderEntry>).flatMap(([name, { address }]) =>
  address ? [{ name, address, scheme: address.slice(0, address.indexOf('://') + 3) }] : [],
);
/** The address forms providers listen at, for messages: '"tcp://HOST:PORT", ... or "shm://NAME"'. */
export const ADDRESS_FORMS = ADDRESSED.map(({ address }) => `"${address}"`).join(', ').replace(/, ([^,]*)$/, ' or $1');

/** The provider an address is for (by its scheme), with that scheme; undefined for none. */
export function providerOfAddress(address: string): { name: string; scheme: string } | undefined {
  return ADDRESSED.find(({ scheme }) => address.startsWith(scheme));
}
