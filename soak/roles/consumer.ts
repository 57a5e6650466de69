// The rendezvous consumer: in each step of the current session it receives the producer's
// tensors, checks every byte, and sends its acknowledgement; steps two behind are cleaned up.
import { RendezvousMgr, createKey } from '../../src';
import { config, failure, heartbeat, isStopping, memoryEndpoint, onStop, report, startRole } from './common';
import { ackFor, device, nextSession, prefixed, sameTensor, session, sessionSignal, stepOf, tensorFor } from './session';

const stats: Record<string, number> = { steps: 0, tensorsReceived: 0, bytesReceived: 0, mismatches: 0, sessions: 0 };

async function main(): Promise<void> {
  startRole();
  const r = config.rendezvous!;
  const provider = config.transport === 'tcp' ? 'tcp' : 'auto';
  const { endpoint, peers } = await memoryEndpoint(provider, [r.consumerTask]);
  const mgr = RendezvousMgr.create(endpoint);
  heartbeat(() => stats.steps + stats.sessions, () => ({ ...stats, ...prefixed(mgr.counters) }));
  await peers;
  onStop(async () => {
    await mgr.close();
    await endpoint.close();
  });

  let s: number | undefined;
  const live: number[] = [];
  while (!isStopping()) {
    const next = await nextSession(s, 60_000);
    if (next === undefined) continue;
    s = next;
    for (const step of live.splice(0)) mgr.cleanup(step);
    stats.sessions++;
    const producer = await endpoint.directory.resolveLabel(r.producerTask);
    if (!producer) {
      report({ type: 'stuck', session: s, code: 'no producer in the directory' });
      continue;
    }
    const signal = sessionSignal();
    for (let i = 1; session() === s && !isStopping(); i++) {
      const step = stepOf(s, i);
      const rendezvous = mgr.find(step);
      live.push(step);
      try {
        const received = await Promise.all(
          Array.from({ length: r.tensors }, (_, k) =>
            rendezvous.recv(createKey(device(r.producerTask), producer.incarnation, device(r.consumerTask), `t${k}`), { timeout: r.recvTimeoutMs, signal }),
          ),
        );
        received.forEach((got, k) => {
          stats.tensorsReceived++;
          stats.bytesReceived += (got.tensor.data as Float32Array).byteLength;
          if (!sameTensor(got.tensor, tensorFor(s!, i, k))) {
            stats.mismatches++;
            report({ type: 'violation', check: 'rendezvous-bytes', detail: `${config.role}: tensor t${k} of step ${step} differs from what was sent` });
          }
          got.release?.();
        });
        rendezvous.send(createKey(device(r.consumerTask), endpoint.incarnation, device(r.producerTask), 'ack'), ackFor(s, i));
        stats.steps++;
      } catch (error) {
        if (isStopping() || session() !== s) break; // ended by us
        const code = failure('rendezvous', error, stats);
        report({ type: 'stuck', session: s, code });
        break;
      }
      // The producer took step i - 1's acknowledgement before it sent step i's tensors.
      while (live.length > 2) mgr.cleanup(live.shift()!);
    }
  }
}

void main();
