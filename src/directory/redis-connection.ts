// How RedisDirectory reaches Redis: the ioredis client made from its options (one server, a
// primary through sentinels, or a cluster; credentials from the options or the URL, TLS for
// rediss:// or a `tls` option), the URL as messages may show it
// (password masked), and which failures mean Redis refused us (ERR_RVMA_AUTH) rather than could
// not be reached (ERR_RVMA_DIRECTORY_UNAVAILABLE).
import * as fs from 'node:fs';
import { isIP } from 'node:net';
import * as tls from 'node:tls';
import type { ConnectionOptions } from 'node:tls';
import Redis, { Cluster } from 'ioredis';
import { RvmaError } from '../base/errors';
import { checkBoolean, checkInteger, checkOptions, checkString, invalid } from '../base/validate';

export interface RedisTlsOptions {
  /** PEM certificate(s) of the CA that signed the server's certificate. Default: the system's. */
  ca?: string | Buffer;
  /** A file holding `ca`, read at connect. */
  caFile?: string;
  /** The name the server's certificate must carry. Default: the URL's host. */
  servername?: string;
  /** false: accept any server certificate (testing only: anyone on the path can then pose as Redis). Default true. */
  rejectUnauthorized?: boolean;
}

export interface RedisCredentials {
  /** ACL user (Redis 6 and later). Default: the URL's user, else 'default'. */
  username?: string;
  /** Default: the URL's password, if any. */
  password?: string;
  /** TLS to Redis; `rediss://` URLs use it with the defaults. */
  tls?: RedisTlsOptions | boolean;
}

const TLS_KEYS = ['ca', 'caFile', 'servername', 'rejectUnauthorized'] as const;

/** The URL with its password replaced by "***": safe for messages and logs. */
export function maskedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString().replace(/\/$/, url.endsWith('/') ? '/' : '');
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
  }
}

function tlsOptions(call: string, tls: RedisCredentials['tls'], url: string): ConnectionOptions | undefined {
  if (tls === undefined) return url.startsWith('rediss://') ? {} : undefined;
  if (typeof tls === 'boolean') return checkBoolean(call, 'tls', tls) ? {} : undefined;
  const o = checkOptions<RedisTlsOptions>(`${call} tls`, tls, TLS_KEYS);
  const options: ConnectionOptions = {};
  if (o.ca !== undefined && o.caFile !== undefined) throw invalid(call, 'tls: give ca or caFile, not both');
  if (o.ca !== undefined) {
    if (typeof o.ca !== 'string' && !Buffer.isBuffer(o.ca)) throw invalid(call, 'tls.ca must be a PEM string or a Buffer');
    options.ca = o.ca;
  }
  if (o.caFile !== undefined) {
    const file = checkString(call, 'tls.caFile', o.caFile);
    try {
      options.ca = fs.readFileSync(file);
    } catch (error) {
      throw invalid(call, `tls.caFile ${file} cannot be read: ${(error as Error).message}`);
    }
  }
  if (o.servername !== undefined) options.servername = checkString(call, 'tls.servername', o.servername);
  if (o.rejectUnauthorized !== undefined) options.rejectUnauthorized = checkBoolean(call, 'tls.rejectUnauthorized', o.rejectUnauthorized);
  return options;
}

/** Like checkString, but the message never shows the value. */
function checkPassword(call: string, password: unknown): string {
  if (typeof password !== 'string') throw invalid(call, `password must be a string, got ${password === null ? 'null' : typeof password}`);
  return password;
}

/** A replicated Redis found through its sentinels: they name the primary, and a new one after a failover. */
export interface SentinelTarget {
  sentinels: { host: string; port: number }[];
  /** The name the sentinels monitor the primary under. */
  name: string;
  sentinelUsername?: string;
  sentinelPassword?: string;
}

/** Checks `sentinels` and `name` (and the sentinels' credentials) of the options. */
export function sentinelTarget(call: string, o: Partial<SentinelTarget>): SentinelTarget {
  const sentinels = hostPorts(call, 'sentinels', o.sentinels);
  return {
    sentinels,
    name: checkString(call, 'name', o.name),
    ...(o.sentinelUsername === undefined ? {} : { sentinelUsername: checkString(call, 'sentinelUsername', o.sentinelUsername) }),
    ...(o.sentinelPassword === undefined ? {} : { sentinelPassword: checkPassword(call, o.sentinelPassword) }),
  };
}

/** A sharded Redis (Cluster): the nodes to ask first for the cluster's layout (any of them will do). */
export interface ClusterTarget {
  clusterNodes: { host: string; port: number }[];
}

/** Checks a list of { host, port } (sentinels, cluster nodes). */
function hostPorts(call: string, what: string, list: unknown): { host: string; port: number }[] {
  if (!Array.isArray(list) || list.length === 0) throw invalid(call, `${what} must be a non-empty array of { host, port }`);
  return list.map((s, i) => {
    const a = checkOptions<{ host: string; port: number }>(`${call} ${what}[${i}]`, s, ['host', 'port']);
    return { host: checkString(call, `${what}[${i}].host`, a.host), port: checkInteger(call, `${what}[${i}].port`, a.port, 1, 65535) };
  });
}

/** Checks `clusterNodes`. */
export function clusterTarget(call: string, nodes: unknown): ClusterTarget {
  return { clusterNodes: hostPorts(call, 'clusterNodes', nodes) };
}

/** What the directory talks to: one server (or a primary found through sentinels), or a cluster. */
export type RedisClient = Redis | Cluster;

/** How long the client waits: to connect, for a command's answer, between reconnect attempts (at most). */
export interface RedisTimeouts {
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  reconnectCapMs: number;
}

/**
 * The client (not yet connected) for these options: to a URL, through sentinels, or to a
 * cluster. After the first connection it keeps reconnecting, 100 ms more per attempt up to
 * `reconnectCapMs`: a Redis that comes back (or the primary a failover promoted) is found
 * within that long. A command unanswered for `commandTimeoutMs` fails.
 */
export function redisClient(
  call: string,
  target: string | SentinelTarget | ClusterTarget,
  credentials: RedisCredentials,
  { connectTimeoutMs, commandTimeoutMs, reconnectCapMs }: RedisTimeouts,
): RedisClient {
  const tls = tlsOptions(call, credentials.tls, typeof target === 'string' ? target : '');
  const options = {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 2,
    retryStrategy: (attempt: number) => Math.min(attempt * 100, reconnectCapMs),
    // How long a disconnect waits for the socket to close before destroying it. ioredis' 2 s
    // timer is never cleared for a socket that closed already (a refused connect), and it kept
    // a process alive 2 s after a failed connect.
    disconnectTimeout: 100,
    // ioredis' ready check runs INFO, which the ACL docs/directory.md gives a confined user
    // (-@dangerous) does not allow: it warned on every connect. connect() sends its own PING,
    // and a command refused while Redis loads its data fails like any other and is retried.
    enableReadyCheck: false,
    ...(credentials.username === undefined ? {} : { username: checkString(call, 'username', credentials.username) }),
    ...(credentials.password === undefined ? {} : { password: checkPassword(call, credentials.password) }),
    ...(tls ? { tls } : {}),
  };
  if (typeof target === 'string') return new Redis(target, options);
  const retry = (attempt: number) => Math.min(attempt * 100, reconnectCapMs);
  if ('clusterNodes' in target) {
    const { lazyConnect, retryStrategy: _perConnection, ...perNode } = options; // the cluster retries instead
    return new Cluster(target.clusterNodes, {
      lazyConnect,
      redisOptions: perNode,
      clusterRetryStrategy: retry,
      // A primary that fails leaves its slots down until a replica is promoted: commands wait
      // and retry meanwhile (bounded by maxRetriesPerRequest), and the slot map is read again.
      retryDelayOnClusterDown: 200,
      retryDelayOnFailover: 200,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: connectTimeoutMs,
      // A cluster is ready once CLUSTER INFO says its slots are served.
      enableReadyCheck: true,
    });
  }
  return new Redis({
    ...options,
    ...target,
    // The sentinels say at once when they promote another primary, rather than at a reconnect.
    failoverDetector: true,
    sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 100, reconnectCapMs),
    ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
  });
}

// Redis's replies when it refuses who we are or what we may do, and the TLS errors of a server
// whose certificate we do not accept.
const REFUSED_REPLY = /^(WRONGPASS|NOAUTH|NOPERM)\b/;
const TLS_REFUSED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Why a TLS handshake with the first of the sentinels or cluster nodes fails, when it fails
 * because of the server's certificate: ioredis reports such a failure there only as a closed
 * connection, so a connect that failed asks once more itself. Undefined otherwise.
 */
export async function certificateRefusal(call: string, target: string | SentinelTarget | ClusterTarget, credentials: RedisCredentials, timeoutMs: number): Promise<Error | undefined> {
  if (typeof target === 'string') return undefined;
  const options = tlsOptions(call, credentials.tls, '');
  if (!options) return undefined;
  const { host, port } = 'clusterNodes' in target ? target.clusterNodes[0] : target.sentinels[0];
  const error = await new Promise<Error | undefined>((resolve) => {
    // An IP address is checked against the certificate without a server name (SNI takes none).
    const socket = tls.connect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...options });
    const done = (e: Error | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(e);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('secureConnect', () => done(undefined));
    socket.once('error', done);
  });
  return isRefusal(error) ? error : undefined;
}

/** A cluster client fails its connect with "Failed to refresh slots cache": the reason is the last node's error it wraps. */
export function nodeErrorOf(error: unknown): unknown {
  return (error as { lastNodeError?: Error } | undefined)?.lastNodeError ?? error;
}

/** Whether Redis (or the TLS layer) refused our credentials or its certificate. */
export function isRefusal(error: unknown): boolean {
  const e = error as { message?: string; code?: string } | undefined;
  return REFUSED_REPLY.test(e?.message ?? '') || TLS_REFUSED.has(e?.code ?? '');
}

/** A failed Redis call as the typed error: ERR_RVMA_AUTH for a refusal, else unreachable. */
export function directoryError(what: string, cause: unknown): RvmaError {
  if (cause instanceof RvmaError) return cause;
  const message = (cause as Error).message;
  if (isRefusal(cause)) return new RvmaError('ERR_RVMA_AUTH', `${what}: Redis refused this client: ${message}`, { cause });
  return new RvmaError('ERR_RVMA_DIRECTORY_UNAVAILABLE', `${what}: ${message}`, { cause });
}
