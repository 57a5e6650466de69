// The tcp provider's options (Endpoint.create's `tcp` group): types, limits, checks.
import { checkBoolean, checkInteger, checkOptions, invalid } from '../base/validate';

export interface TcpOptions {
  /** Largest put a peer may send us; larger ones are refused with ERR_RVMA_TOO_LARGE. Default 4 GiB. */
  maxPutBytes?: number;
  /** Bytes in flight (sent, not yet acknowledged) per connection before puts wait. Default 64 MiB. */
  maxInflightBytes?: number;
  /** An idle connection is probed this often. Default 1000 ms. */
  keepaliveMs?: number;
  /** A peer silent for longer is lost: its pending puts reject with ERR_RVMA_PEER_LOST. Default 5000 ms. */
  peerTimeoutMs?: number;
  /** Connection setup (TCP connect + handshake) limit. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Connections this endpoint opens to each peer it dials (1..64). Default 1. */
  stripes?: number;
  /** Puts at least this large are split across the stripes in offset-addressed parts. Default 1 MiB. */
  stripeMinBytes?: number;
  /** Send a split put's parts last-first, one at a time (for testing order-free placement). */
  stripeReverse?: boolean;
  /**
   * A connection that breaks while its peer lives on: its puts wait this long for a new
   * connection to the same incarnation of the peer and are sent again over it (each placed
   * exactly once). Beyond, or if the peer is gone, they reject with ERR_RVMA_PEER_LOST.
   * As a receiver, how long to remember a sender's puts once it has no connection left.
   * 0: no reconnecting (puts reject at once). Default 3000 ms.
   */
  reconnectMs?: number;
  /**
   * Connections accepted from peers and alive at once (in their handshake or ready); a
   * connection past it is closed as soon as it is accepted. Default 1024.
   */
  maxConnections?: number;
  /**
   * Accepted connections still in their handshake; past it the oldest of them is closed, so
   * idle or slow handshakes cannot keep other peers out. Each lasts connectTimeoutMs at most. Default 64.
   */
  maxHandshakes?: number;
}

const MAX_MS = 2 ** 31 - 1;
const KEYS: (keyof TcpOptions)[] = [
  'maxPutBytes',
  'maxInflightBytes',
  'keepaliveMs',
  'peerTimeoutMs',
  'connectTimeoutMs',
  'stripes',
  'stripeMinBytes',
  'stripeReverse',
  'reconnectMs',
  'maxConnections',
  'maxHandshakes',
];

/** Checks the `tcp` group of Endpoint.create's options (defaults stay native). */
export function parseTcpOptions(call: string, options: unknown): TcpOptions {
  const tcp = checkOptions<TcpOptions>(`${call} tcp`, options, KEYS);
  for (const key of KEYS) {
    if (tcp[key] === undefined) continue;
    if (key === 'stripeReverse') {
      checkBoolean(call, `tcp.${key}`, tcp[key]);
    } else {
      const max = key === 'stripes' ? 64 : key.endsWith('Ms') ? MAX_MS : Number.MAX_SAFE_INTEGER;
      checkInteger(call, `tcp.${key}`, tcp[key], key === 'reconnectMs' ? 0 : 1, max);
    }
  }
  if ((tcp.keepaliveMs ?? 1000) >= (tcp.peerTimeoutMs ?? 5000)) {
    throw invalid(call, 'tcp.keepaliveMs must be smaller than tcp.peerTimeoutMs');
  }
  return tcp;
}
