// Rendezvous fixtures: endpoints named by TensorFlow task labels that share a private
// directory hub (so tests never resolve each other's tasks), a RendezvousMgr on each, and
// a hook that tells when a sender has parked a remote request (no sleeping on a guess).
import { randomBytes } from 'node:crypto';
import {
  Endpoint,
  MemoryDirectory,
  MemoryDirectoryHub,
  type Rendezvous,
  RendezvousMgr,
  type RendezvousOptions,
  type Tensor,
  createKey,
} from '../../src';
import { RDMA_ADDR } from './verbs';

export type InProcessProvider = 'auto' | 'tcp' | 'verbs';
/** The providers the host can run ('verbs' needs the Soft-RoCE guest). */
export const IN_PROCESS_PROVIDERS: InProcessProvider[] = ['auto', 'tcp'];

const run = randomBytes(3).toString('hex');
let jobs = 0;

/** A job name no other test uses, so labels never collide in a shared hub. */
export function uniqueJob(label = 'worker'): string {
  jobs += 1;
  return `${label}${run}x${jobs}`;
}

export function task(job: string, index: number): string {
  return `/job:${job}/replica:0/task:${index}`;
}

export function device(taskName: string): string {
  return `${taskName}/device:CPU:0`;
}

export interface Node {
  endpoint: Endpoint;
  mgr: RendezvousMgr;
  task: string;
}

export interface Pair {
  sender: Node;
  receiver: Node;
  /** A key from the sender's task to the receiver's, for the sender's current incarnation. */
  key(name: string): string;
}

export interface RendezvousTracker {
  /** One endpoint labelled with task; closed (manager first) after the test. */
  node(hub: MemoryDirectoryHub, taskName: string, provider: InProcessProvider, options?: RendezvousOptions): Promise<Node>;
  /** Sender on task 0 and receiver on task 1 of a fresh job, sharing a fresh hub. */
  pair(provider: InProcessProvider, options?: { sender?: RendezvousOptions; receiver?: RendezvousOptions }): Promise<Pair>;
}

/** Call once per file (top level): everything it creates is closed in afterEach. */
export function trackRendezvous(): RendezvousTracker {
  const open: Node[] = [];
  afterEach(async () => {
    const all = open.splice(0);
    // Endpoints close even when a manager's close fails (the failure is still reported).
    const closed = await Promise.allSettled(all.map((n) => n.mgr.close()));
    await Promise.all(all.map((n) => n.endpoint.close()));
    const failed = closed.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  });
  const node: RendezvousTracker['node'] = async (hub, taskName, provider, options) => {
    const endpoint = await Endpoint.create({
      labels: [taskName],
      provider,
      // tcp and verbs in one process still need addresses to dial; auto reaches same-process peers by loopback.
      ...(provider === 'tcp' ? { listen: 'tcp://127.0.0.1:0' } : provider === 'verbs' ? { listen: `rdma://${RDMA_ADDR}:0` } : {}),
      directory: new MemoryDirectory(hub),
    });
    let mgr: RendezvousMgr;
    try {
      mgr = RendezvousMgr.create(endpoint, options);
    } catch (error) {
      await endpoint.close();
      throw error;
    }
    const n = { endpoint, mgr, task: taskName };
    open.push(n);
    return n;
  };
  return {
    node,
    async pair(provider, options = {}) {
      const hub = new MemoryDirectoryHub();
      const job = uniqueJob();
      const sender = await node(hub, task(job, 0), provider, options.sender);
      const receiver = await node(hub, task(job, 1), provider, options.receiver);
      return {
        sender,
        receiver,
        key: (name) => createKey(device(sender.task), sender.endpoint.incarnation, device(receiver.task), name),
      };
    },
  };
}

/**
 * Resolves with the key of the next remote request the manager parks (or answers at once)
 * on this rendezvous: the manager serves a request through Rendezvous.recvLocal.
 */
export function nextServed(rendezvous: Rendezvous): Promise<string> {
  return new Promise((resolve) => {
    const original = rendezvous.recvLocal;
    rendezvous.recvLocal = function (this: Rendezvous, key, done) {
      rendezvous.recvLocal = original;
      original.call(this, key, done);
      resolve(key);
    };
  });
}

/** The bytes a tensor's data occupies, viewed in place. */
export function bytesOf(t: Tensor): Buffer {
  if (t.dtype === 'string') throw new Error('string tensors have no flat bytes');
  const d = t.data as ArrayBufferView;
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

/** A float32 tensor of `shape` whose bytes depend on seed (every element different). */
export function floats(shape: number[], seed: number): Tensor {
  const count = shape.reduce((n, d) => n * d, 1);
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = seed * 1_000_003 + i * 0.5;
  return { dtype: 'float32', shape, data };
}
