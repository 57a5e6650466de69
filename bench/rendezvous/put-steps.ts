// The baseline's step with plain puts of the same bytes: the producer puts K tensors into the consumer's
// mailbox and waits for the answer put into its own; the consumer re-posts each buffer and answers.
import { type Endpoint, type Mailbox } from '../../src';
import { type StepScenario } from './config';
import { type Step } from './steps';
import { ackTensor, bytesOf, checkReceived, tensorsFor } from './workload';

/** Mailboxes of one measurement at fresh vaddrs, so nothing of an earlier one can land in them. */
const DATA_BASE = 0x100000n;
const ACK_BASE = 0x80000000n;
export const dataVaddr = (firstStep: number): bigint => DATA_BASE + BigInt(firstStep);
export const ackVaddr = (firstStep: number): bigint => ACK_BASE + BigInt(firstStep);

/** A mailbox of `buffers` buffers of `size` bytes, each epoch one put of exactly that size. */
export function inbox(endpoint: Endpoint, vaddr: bigint, size: number, buffers: number): Mailbox {
  const mailbox = endpoint.openMailbox(vaddr, { epoch: 'bytes', maxBuffers: buffers });
  for (let i = 0; i < buffers; i++) mailbox.post(size);
  return mailbox;
}

export function producerStep(endpoint: Endpoint, consumer: string, s: StepScenario, data: bigint, answers: Mailbox): Step {
  const sources = tensorsFor(s).map(bytesOf);
  const ack = ackTensor(s);
  return async (id) => {
    const puts = sources.map((bytes) => endpoint.put(consumer, data, bytes));
    await Promise.all(puts);
    const answer = await answers.next();
    checkReceived(new Float32Array(answer.buffer.buffer, answer.buffer.byteOffset, answer.bytes / 4), ack, `step ${id} answer`);
    answers.post(answer.buffer);
  };
}

export function consumerStep(endpoint: Endpoint, producer: string, s: StepScenario, data: Mailbox, answer: bigint): Step {
  const tensors = tensorsFor(s);
  const ack = bytesOf(ackTensor(s));
  let failure: unknown;
  return async (id) => {
    if (failure !== undefined) throw failure;
    for (let i = 0; i < tensors.length; i++) {
      const c = await data.next();
      checkReceived(new Float32Array(c.buffer.buffer, c.buffer.byteOffset, c.bytes / 4), tensors[i], `step ${id} tensor ${i}`);
      data.post(c.buffer);
    }
    // Not awaited, as the rendezvous consumer's send is not: the producer waits for it.
    endpoint.put(producer, answer, ack).catch((error: unknown) => (failure ??= error));
  };
}
