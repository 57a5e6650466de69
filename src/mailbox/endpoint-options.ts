// Endpoint options: their types, defaults and checks (everything a caller passes in).
import { randomBytes } from 'node:crypto';
import type { Directory } from '../directory/directory';
import { checkBoolean, checkInteger, checkOneOf, checkOptions, checkString, invalid } from '../base/validate';
import { type AuthOptions, parseAuthOptions } from './auth-options';
import { type ShmOptions, parseShmOptions } from './shm-options';
import { type VerbsOptions, parseVerbsOptions } from './verbs-options';

export type ProgressMode = 'loop' | 'thread';
export type ProviderName = 'auto' | 'loopback' | 'tcp' | 'shm' | 'verbs';

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

/** A connection to a peer broke (the peer died, or the network between us failed). */
export interface PeerLostInfo {
  nodeId: string;
  incarnation: string;
  /** Why the connection ended, as the provider saw it (a hang-up, silence past the keepalive bound, a failed RDMA work request...). */
  reason: string;
}

/** A peer that failed authentication (its connection was closed before any of its puts was read). */
export interface AuthFailedInfo {
  /** The peer's address (or 'loopback:NODE'), as this endpoint saw it. */
  peer: string;
  message: string;
}

/** A peer that broke the protocol or failed the handshake (its connection was closed). */
export interface ProtocolErrorInfo {
  peer: string;
  message: string;
}

export interface EndpointOptions {
  /** This endpoint's node id, unique among reachable endpoints. Default: random. */
  nodeId?: string;
  /** 'loop': work runs on the JS thread (lowest latency). 'thread': on a native progress thread. */
  progress?: ProgressMode;
  /**
   * Transports puts may use. 'auto': loopback for endpoints in this process, shared memory
   * (shm) for other processes on this host, tcp for the rest (and verbs for 'rdma://' peers
   * when listen is an 'rdma://' address).
   * 'tcp': tcp even in-process or on one host. 'shm': shared memory only (same host, even
   * in-process). 'loopback': in-process only (no listening).
   * 'verbs': RDMA only (rdma-core), even in-process; needs a device with an ACTIVE port
   * (see Endpoint.capabilities), else create rejects with ERR_RVMA_INVALID_ARGUMENT.
   */
  provider?: ProviderName;
  /**
   * Accept connections at 'tcp://HOST:PORT', at 'rdma://IP:PORT' (verbs; IP must be on an
   * RDMA device's netdev), or at 'shm://NAME' (a same-host name: 1..100 of [A-Za-z0-9._-]).
   * Port 0: any free port; see endpoint.address. With provider 'auto' or 'shm' the endpoint
   * also accepts same-host peers under a name of its own (endpoint.addresses.shm).
   */
  listen?: string;
  tcp?: TcpOptions;
  /** Shared-memory provider settings (see ShmOptions). */
  shm?: ShmOptions;
  /** Verbs provider settings (see VerbsOptions). */
  verbs?: VerbsOptions;
  /**
   * Where this endpoint registers and resolves peers by node id, label or name.
   * Default: a MemoryDirectory on the process-wide hub, so the endpoints of one process see each other.
   */
  directory?: Directory;
  /** Labels published in the directory, e.g. TensorFlow task names ('/job:worker/replica:0/task:1'). */
  labels?: string[];
  /**
   * Peer authentication: every peer, on every provider, must prove it knows this shared
   * secret (a mutual HMAC-SHA256 challenge-response) before any of its puts is read. Peers
   * without it, or with another secret, are refused with ERR_RVMA_AUTH and reported as
   * 'authFailed'. Default: none (peers are trusted; see docs/security.md).
   */
  auth?: AuthOptions;
}

export interface Capabilities {
  /** Providers compiled into this build. */
  providers: string[];
  /** Whether rdma-core (libibverbs, librdmacm) was found and linked at build time. */
  rdmaCore: boolean;
  /** RDMA devices present now, with their ports and how many of them are ACTIVE. */
  devices: RdmaDevice[];
  /**
   * Whether this process may use cross-memory copies (process_vm_readv), which shm uses to
   * pull large puts (a seccomp filter can forbid them). A peer may still refuse them (another
   * user, ptrace restrictions): endpoint.peers() tells per peer.
   */
  cma: boolean;
  /** The wire protocol version each provider speaks; a peer of another version is refused. */
  protocols: { tcp: number; shm: number; verbs: number };
}

/** An RDMA device as rdma-core reports it (see Capabilities.devices). */
export interface RdmaDevice {
  name: string;
  activePorts: number;
  /** Absent when the device could not be opened or queried. */
  firmware?: string;
  /** Largest memory region the device registers, in bytes. */
  maxMrBytes?: number;
  ports: RdmaPort[];
}

export interface RdmaPort {
  /** 1-based, as in ibv_query_port. */
  port: number;
  /** IBV_PORT_<state> without the prefix: 'ACTIVE', 'DOWN', 'INIT', 'ARMED', 'ACTIVE_DEFER', 'NOP'. */
  state: string;
  /** The MTU in use, in bytes. */
  activeMtu: number;
  linkLayer: 'InfiniBand' | 'Ethernet';
  lid: number;
  /** The non-zero GID table entries (at most 32). */
  gids: { index: number; gid: string; type: 'IB' | 'RoCEv1' | 'RoCEv2' | 'unknown' }[];
}

/** Library-reserved vaddrs (rendezvous control, ring): not for openMailbox. */
export const RESERVED_VADDR_MAX = 0xffffn;
/** openDynamicMailbox hands out vaddrs from here up. */
export const DYNAMIC_VADDR_BASE = 1n << 63n;
export const MAX_BUFFERS_LIMIT = 1 << 20;
const MAX_NODE_ID_BYTES = 255;
const SHM_NAME = /^[A-Za-z0-9._-]{1,100}$/; // the handshake carries it in at most that many bytes
const MAX_MS = 2 ** 31 - 1;
const TCP_KEYS = [
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
] as const;

export interface CreateSettings {
  nodeId: string;
  progress: ProgressMode;
  provider: ProviderName;
  listen: string | undefined;
  tcp: TcpOptions;
  verbs: VerbsOptions;
  /** undefined: the shm provider does not run. */
  shm: (Omit<ShmOptions, 'enabled'> & { name?: string }) | undefined;
  labels: string[];
  directory: Directory | undefined;
  /** The shared secret of `auth`, undefined without it. */
  authSecret: Buffer | undefined;
}

/** Checks Endpoint.create's options and fills in the defaults. */
export function parseCreateOptions(options: unknown): CreateSettings {
  const call = 'Endpoint.create';
  const o = checkOptions<EndpointOptions>(call, options, [
    'nodeId',
    'progress',
    'provider',
    'listen',
    'tcp',
    'verbs',
    'shm',
    'directory',
    'labels',
    'auth',
  ]);
  const nodeId = o.nodeId === undefined ? randomBytes(8).toString('hex') : checkString(call, 'nodeId', o.nodeId);
  if (Buffer.byteLength(nodeId) > MAX_NODE_ID_BYTES) {
    throw invalid(call, `nodeId must be at most ${MAX_NODE_ID_BYTES} bytes of UTF-8`);
  }
  const progress = checkOneOf<ProgressMode>(call, 'progress', o.progress ?? 'loop', ['loop', 'thread']);
  const provider = checkOneOf<ProviderName>(call, 'provider', o.provider ?? 'auto', ['auto', 'loopback', 'tcp', 'shm', 'verbs']);
  const listen = o.listen === undefined ? undefined : checkString(call, 'listen', o.listen);
  if (listen !== undefined && !listen.startsWith('tcp://') && !listen.startsWith('rdma://') && !listen.startsWith('shm://')) {
    throw invalid(call, `listen must look like "tcp://HOST:PORT", "rdma://IP:PORT" or "shm://NAME", got "${listen}"`);
  }
  if (listen?.startsWith('shm://') && !SHM_NAME.test(listen.slice(6))) {
    throw invalid(call, `listen "${listen}": an shm name is 1..100 characters of [A-Za-z0-9._-]`);
  }
  if (listen?.startsWith('shm://') && provider !== 'auto' && provider !== 'shm') {
    throw invalid(call, 'an "shm://" listen address needs provider "shm" or "auto"');
  }
  if (provider === 'shm' && listen !== undefined && !listen.startsWith('shm://')) {
    throw invalid(call, `provider "shm" listens at "shm://NAME", not "${listen}"`);
  }
  if (listen !== undefined && provider === 'loopback') throw invalid(call, 'listen needs a network provider, not "loopback"');
  if (listen?.startsWith('rdma://') && provider === 'tcp') throw invalid(call, 'an "rdma://" listen address needs provider "verbs" or "auto"');
  if (listen?.startsWith('tcp://') && provider === 'verbs') throw invalid(call, 'provider "verbs" listens at "rdma://IP:PORT", not "tcp://"');
  const tcp = checkOptions<TcpOptions>(`${call} tcp`, o.tcp, TCP_KEYS);
  for (const key of TCP_KEYS) {
    if (key === 'stripeReverse') {
      if (tcp[key] !== undefined) checkBoolean(call, `tcp.${key}`, tcp[key]);
    } else if (tcp[key] !== undefined) {
      const max = key === 'stripes' ? 64 : key.endsWith('Ms') ? MAX_MS : Number.MAX_SAFE_INTEGER;
      checkInteger(call, `tcp.${key}`, tcp[key], key === 'reconnectMs' ? 0 : 1, max);
    }
  }
  if ((tcp.keepaliveMs ?? 1000) >= (tcp.peerTimeoutMs ?? 5000)) {
    throw invalid(call, 'tcp.keepaliveMs must be smaller than tcp.peerTimeoutMs');
  }
  const verbs = parseVerbsOptions(call, o.verbs);
  // Loop progress polls on the JS thread: spinning there would stall the application.
  if (verbs.busyPollUs && progress !== 'thread') throw invalid(call, "verbs.busyPollUs needs progress: 'thread'");
  const shmOptions = parseShmOptions(call, o.shm);
  if (provider === 'shm' && shmOptions.enabled === false) throw invalid(call, 'provider "shm" needs shm.enabled');
  const runsShm = (provider === 'auto' || provider === 'shm') && shmOptions.enabled !== false;
  if (listen?.startsWith('shm://') && !runsShm) throw invalid(call, 'an "shm://" listen address needs shm.enabled');
  const { enabled: _enabled, ...shmNative } = shmOptions; // the native side runs shm when given the group
  const shm = runsShm ? { ...shmNative, name: listen?.startsWith('shm://') ? listen.slice(6) : undefined } : undefined;
  const labels = o.labels === undefined ? [] : o.labels;
  if (!Array.isArray(labels) || !labels.every((l) => typeof l === 'string' && l.length > 0)) {
    throw invalid(call, 'labels must be an array of non-empty strings');
  }
  if (o.directory !== undefined && (typeof o.directory !== 'object' || typeof o.directory.register !== 'function')) {
    throw invalid(call, 'directory must implement the Directory interface');
  }
  const authSecret = parseAuthOptions(call, o.auth);
  return { nodeId, progress, provider, listen, tcp, verbs, shm, labels, directory: o.directory, authSecret };
}
