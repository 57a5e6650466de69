// The rendezvous variant's step, each side: the producer sends K tensors and receives the
// answer; the consumer receives the K tensors and sends the answer; both clean up step - 2.
import { createKey } from '../../src';
import { CONSUMER_TASK, PRODUCER_TASK, RECV_TIMEOUT_MS, type StepScenario, device } from './config';
import { type Peer } from './peer';
import { type Step } from './steps';
import { ackTensor, checkReceived, tensorsFor } from './workload';

/** The keys of one scenario: K tensors from the producer, one answer from the consumer. */
export interface StepKeys {
  tensors: string[];
  ack: string;
}

export function keysFor(s: StepScenario, producerIncarnation: string, consumerIncarnation: string): StepKeys {
  const from = device(PRODUCER_TASK);
  const to = device(CONSUMER_TASK);
  return {
    tensors: Array.from({ length: s.tensors }, (_, i) => createKey(from, producerIncarnation, to, `${s.id}_t${i}`)),
    ack: createKey(to, consumerIncarnation, from, `${s.id}_ack`),
  };
}

/**
 * How received tensors go back to the receive pool: not at all (garbage-collected), recycled at
 * their step's cleanup (recv option), or by release() once checked.
 */
export type Reuse = 'none' | 'recycle' | 'release';

export function reuseOf(transport: string): Reuse {
  return transport === 'rendezvous-release' ? 'release' : transport === 'rendezvous-recycle' ? 'recycle' : 'none';
}

export function producerStep(peer: Peer, s: StepScenario, keys: StepKeys, reuse: Reuse): Step {
  const { mgr } = peer;
  const tensors = tensorsFor(s);
  const ack = ackTensor(s);
  const release = reuse === 'release';
  const options = { timeout: RECV_TIMEOUT_MS, recycle: reuse === 'recycle' };
  return async (id) => {
    const step = mgr.find(id);
    for (let i = 0; i < tensors.length; i++) step.send(keys.tensors[i], tensors[i]);
    const answer = await step.recv(keys.ack, options);
    checkReceived(answer.tensor.data as Float32Array, ack, `step ${id} answer`);
    if (release) answer.release?.();
    if (id > 2) mgr.cleanup(id - 2);
  };
}

export function consumerStep(peer: Peer, s: StepScenario, keys: StepKeys, reuse: Reuse): Step {
  const { mgr } = peer;
  const tensors = tensorsFor(s);
  const ack = ackTensor(s);
  const release = reuse === 'release';
  const options = { timeout: RECV_TIMEOUT_MS, recycle: reuse === 'recycle' };
  return async (id) => {
    const step = mgr.find(id);
    const got = await Promise.all(keys.tensors.map((key) => step.recv(key, options)));
    got.forEach(({ tensor }, i) => checkReceived(tensor.data as Float32Array, tensors[i], `step ${id} tensor ${i}`));
    if (release) for (const r of got) r.release?.();
    step.send(keys.ack, ack);
    if (id > 2) mgr.cleanup(id - 2);
  };
}
