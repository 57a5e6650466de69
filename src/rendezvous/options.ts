// The rendezvous manager's options, checked once into a fixed shape with every default.
import type { Endpoint } from '../mailbox/endpoint';
import { checkBoolean, checkInteger, checkOptions, invalid } from '../base/validate';

export interface RendezvousOptions {
  /** Tasks this endpoint hosts (e.g. '/job:worker/replica:0/task:1'). Default: the endpoint's labels. */
  tasks?: string[];
  /** Checksum every transfer: the sender's checksum travels in the meta response. Default false. */
  validate?: boolean;
  /** Buffers posted to the control mailbox. Default 256. */
  controlBuffers?: number;
  /** Largest control message in bytes. Default 8192. */
  controlBufferBytes?: number;
  /** How long one control message may take to be accepted by its peer. Default 10000 ms. */
  sendTimeoutMs?: number;
  /** Fault injection: sees (and may alter) content bytes just before the sender puts them. */
  beforeContentPut?: (key: string, bytes: Uint8Array) => void;
  /** Largest tensor content a recv accepts (a sender's meta could claim any size). Default 4 GiB. */
  maxTensorBytes?: number;
  /** Tensor metas remembered for the cached-meta path, least recently used dropped first. Default 4096. */
  metaCacheSize?: number;
  /** Bytes of released receive buffers kept for reuse (Received.release). Default 256 MiB. */
  receivePoolBytes?: number;
  /**
   * Remote recvs' buffers go back to the receive pool when their step is cleaned up, as if
   * release() were called then: a step loop that cleans up its finished steps receives into warm
   * memory with no release() and no garbage collection. The tensor's data must not be used after
   * its step's cleanup. Default false; Rendezvous.recv's own `recycle` overrides it.
   */
  recycle?: boolean;
  /**
   * Bytes of push mailboxes this manager keeps posted for keys that repeat (see docs/rendezvous.md,
   * Push): their senders put the content at once, with no request. Default 64 MiB; 0 turns push off.
   */
  pushBufferBytes?: number;
  /**
   * Largest tensor content pushed; larger ones always take a request. Default 4 MiB: a push saves
   * a request's round trip, a few percent of moving 4 MiB, while its receiver keeps two buffers of
   * the tensor's size posted for the key (within pushBufferBytes).
   */
  pushMaxTensorBytes?: number;
  /**
   * Requests of one peer this manager holds at once (parked until their send, or holding a copy
   * for the re-request); a request past it is refused at once with ERROR_STATUS ERR_RVMA_OVERFLOW.
   * Also the most answers held by no request (refusals, errors, push acceptances) waiting to be
   * accepted by one peer; past it they are not sent. Default 1024 (docs/rendezvous.md, What a
   * peer can make a manager hold).
   */
  maxRequestsPerPeer?: number;
}

/** RendezvousOptions checked, defaults filled in. */
export interface ManagerOptions {
  validate: boolean;
  buffers: number;
  bufferBytes: number;
  sendTimeoutMs: number;
  beforeContentPut?: (key: string, bytes: Uint8Array) => void;
  maxTensorBytes: number;
  metaCacheSize: number;
  receivePoolBytes: number;
  recycle: boolean;
  pushBufferBytes: number;
  pushMaxTensorBytes: number;
  maxRequestsPerPeer: number;
}

const OPTION_KEYS = [
  'tasks',
  'validate',
  'controlBuffers',
  'controlBufferBytes',
  'sendTimeoutMs',
  'beforeContentPut',
  'maxTensorBytes',
  'metaCacheSize',
  'receivePoolBytes',
  'recycle',
  'pushBufferBytes',
  'pushMaxTensorBytes',
  'maxRequestsPerPeer',
] as const;

/** The tasks the manager hosts and its options, checked; a mistake throws ERR_RVMA_INVALID_ARGUMENT. */
export function parseOptions(call: string, endpoint: Endpoint, options: unknown): { tasks: Set<string>; options: ManagerOptions } {
  const o = checkOptions<RendezvousOptions>(call, options, OPTION_KEYS);
  const tasks = o.tasks ?? [...endpoint.labels];
  if (!Array.isArray(tasks) || !tasks.every((t) => typeof t === 'string')) throw invalid(call, 'tasks must be strings');
  if (o.beforeContentPut !== undefined && typeof o.beforeContentPut !== 'function') {
    throw invalid(call, 'beforeContentPut must be a function');
  }
  return {
    tasks: new Set(tasks),
    options: {
      validate: o.validate === undefined ? false : checkBoolean(call, 'validate', o.validate),
      buffers: checkInteger(call, 'controlBuffers', o.controlBuffers ?? 256, 1, 65536),
      bufferBytes: checkInteger(call, 'controlBufferBytes', o.controlBufferBytes ?? 8192, 512, 1 << 24),
      sendTimeoutMs: checkInteger(call, 'sendTimeoutMs', o.sendTimeoutMs ?? 10_000, 1, 2 ** 31 - 1),
      beforeContentPut: o.beforeContentPut,
      maxTensorBytes: checkInteger(call, 'maxTensorBytes', o.maxTensorBytes ?? 2 ** 32, 0, 2 ** 40),
      metaCacheSize: checkInteger(call, 'metaCacheSize', o.metaCacheSize ?? 4096, 0, 2 ** 24),
      receivePoolBytes: checkInteger(call, 'receivePoolBytes', o.receivePoolBytes ?? 256 * 2 ** 20, 0, 2 ** 40),
      recycle: o.recycle === undefined ? false : checkBoolean(call, 'recycle', o.recycle),
      pushBufferBytes: checkInteger(call, 'pushBufferBytes', o.pushBufferBytes ?? 64 * 2 ** 20, 0, 2 ** 40),
      pushMaxTensorBytes: checkInteger(call, 'pushMaxTensorBytes', o.pushMaxTensorBytes ?? 4 * 2 ** 20, 0, 2 ** 40),
      maxRequestsPerPeer: checkInteger(call, 'maxRequestsPerPeer', o.maxRequestsPerPeer ?? 1024, 1, 2 ** 24),
    },
  };
}
