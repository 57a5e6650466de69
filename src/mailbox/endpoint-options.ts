// Endpoint options: their types, defaults and checks (everything a caller passes in).
import { randomBytes } from 'node:crypto';
import type { Directory } from '../directory/directory';
import { checkOneOf, checkOptions, checkString, invalid } from '../base/validate';
import { type AuthOptions, parseAuthOptions } from './auth-options';
import { ADDRESS_FORMS, PROVIDERS, type ProviderName, providerOfAddress } from './provider-table';
import type { ShmOptions } from './shm-options';
import type { TcpOptions } from './tcp-options';
import type { VerbsOptions } from './verbs-options';

export type { ProviderName } from './provider-table';
export type { TcpOptions } from './tcp-options';
export type ProgressMode = 'loop' | 'thread';

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

export interface CreateSettings {
  nodeId: string;
  progress: ProgressMode;
  /** 'auto', a provider of PROVIDERS, or one only the native build knows. */
  provider: string;
  listen: string | undefined;
  /** Each running provider's checked options, under its name (shm's absent: shm does not run). */
  groups: Record<string, object | undefined>;
  labels: string[];
  directory: Directory | undefined;
  /** The shared secret of `auth`, undefined without it. */
  authSecret: Buffer | undefined;
}

/** Checks Endpoint.create's options and fills in the defaults; built: the native build's providers. */
export function parseCreateOptions(options: unknown, built: readonly string[]): CreateSettings {
  const call = 'Endpoint.create';
  const o = checkOptions<EndpointOptions>(call, options, [
    'nodeId',
    'progress',
    'provider',
    'listen',
    ...(Object.keys(PROVIDERS) as (keyof typeof PROVIDERS)[]).filter((name) => 'parse' in PROVIDERS[name]),
    'directory',
    'labels',
    'auth',
  ] as (keyof EndpointOptions)[]);
  const nodeId = o.nodeId === undefined ? randomBytes(8).toString('hex') : checkString(call, 'nodeId', o.nodeId);
  if (Buffer.byteLength(nodeId) > MAX_NODE_ID_BYTES) {
    throw invalid(call, `nodeId must be at most ${MAX_NODE_ID_BYTES} bytes of UTF-8`);
  }
  const progress = checkOneOf<ProgressMode>(call, 'progress', o.progress ?? 'loop', ['loop', 'thread']);
  const names = [...new Set(['auto', ...Object.keys(PROVIDERS), ...built])];
  const provider = checkOneOf<string>(call, 'provider', o.provider ?? 'auto', names);
  const listen = o.listen === undefined ? undefined : checkString(call, 'listen', o.listen);
  checkListen(call, provider, listen);
  const groups: Record<string, object | undefined> = {};
  for (const [name, entry] of Object.entries(PROVIDERS)) {
    if ('parse' in entry) groups[name] = entry.parse(call, o[name as keyof EndpointOptions]);
  }
  const verbs = groups.verbs as VerbsOptions;
  // Loop progress polls on the JS thread: spinning there would stall the application.
  if (verbs.busyPollUs && progress !== 'thread') throw invalid(call, "verbs.busyPollUs needs progress: 'thread'");
  const { enabled, ...shm } = groups.shm as ShmOptions;
  if (provider === 'shm' && enabled === false) throw invalid(call, 'provider "shm" needs shm.enabled');
  const runsShm = (provider === 'auto' || provider === 'shm') && enabled !== false;
  if (listen?.startsWith('shm://') && !runsShm) throw invalid(call, 'an "shm://" listen address needs shm.enabled');
  groups.shm = runsShm ? shm : undefined; // the native side runs shm when given its group
  const labels = o.labels === undefined ? [] : o.labels;
  if (!Array.isArray(labels) || !labels.every((l) => typeof l === 'string' && l.length > 0)) {
    throw invalid(call, 'labels must be an array of non-empty strings');
  }
  if (o.directory !== undefined && (typeof o.directory !== 'object' || typeof o.directory.register !== 'function')) {
    throw invalid(call, 'directory must implement the Directory interface');
  }
  const authSecret = parseAuthOptions(call, o.auth);
  return { nodeId, progress, provider, listen, groups, labels, directory: o.directory, authSecret };
}

/** Whether listen names an address the chosen provider can listen at. */
function checkListen(call: string, provider: string, listen: string | undefined): void {
  if (listen === undefined) return;
  const owner = providerOfAddress(listen);
  if (!owner) throw invalid(call, `listen must look like ${ADDRESS_FORMS}, got "${listen}"`);
  if (owner.name === 'shm' && !SHM_NAME.test(listen.slice(owner.scheme.length))) {
    throw invalid(call, `listen "${listen}": an shm name is 1..100 characters of [A-Za-z0-9._-]`);
  }
  if (provider !== 'auto' && provider !== owner.name) {
    throw invalid(call, `a "${owner.scheme}" listen address needs provider "${owner.name}" or "auto", not "${provider}"`);
  }
}
