// The rendezvous producer: in each step of the current session it sends the step's tensors under
// keys t0..tK-1 and then receives the consumer's acknowledgement; only then does it clean the
// step up. A typed failure ends the session (the harness starts the next one on both sides).
import { RendezvousMgr, createKey } from '../../src';
import { config, failure, heartbeat, isStopping, memoryEndpoint, onStop, report, sleep, startRole } from './common';
import { ackFor, device, nextSession, prefixed, sameTensor, session, sessionSignal, stepOf, tensorFor } from './session';

const stats: Record<string, number> = { steps: 0, tensorsSent: 0, sessions: 0, ackMismatches: 0 };

async function main(): Promise<void> {
  startRole();
  const r = config.rendezvous!;
  const provider = config.transport === 'tcp' ? 'tcp' : 'auto';
  const { endpoint, peers } = await memoryEndpoint(provider, [r.producerTask]);
  const mgr = RendezvousMgr.create(endpoint);
  heartbeat(() => stats.steps + stats.sessions, () => ({ ...stats, ...prefixed(mgr.counters) }));
  await peers;
  onStop(async () => {
    await mgr.close();
    await endpoint.close();
  });
  const period = 1000 / r.stepsPerSecond;

  let s: number | undefined;
  while (!isStopping()) {
    const next = await nextSession(s, 60_000);
    if (next === undefined) continue;
    s = next;
    stats.sessions++;
    const consumer = await endpoint.directory.resolveLabel(r.consumerTask);
    if (!consumer) {
      report({ type: 'stuck', session: s, code: 'no consumer in the directory' });
      continue;
    }
    const signal = sessionSignal();
    for (let i = 1; session() === s && !isStopping(); i++) {
      const began = Date.now();
      const step = stepOf(s, i);
      const rendezvous = mgr.find(step);
      try {
        for (let k = 0; k < r.tensors; k++) {
          rendezvous.send(createKey(device(r.producerTask), endpoint.incarnation, device(r.consumerTask), `t${k}`), tensorFor(s, i, k));
          stats.tensorsSent++;
        }
        const ack = await rendezvous.recv(createKey(device(r.consumerTask), consumer.incarnation, device(r.producerTask), 'ack'), { timeout: r.recvTimeoutMs, signal });
        if (!sameTensor(ack.tensor, ackFor(s, i))) {
          stats.ackMismatches++;
          report({ type: 'violation', check: 'rendezvous-bytes', detail: `${config.role}: the acknowledgement of step ${step} has the wrong content` });
        }
        ack.release?.();
        stats.steps++;
      } catch (error) {
        mgr.cleanup(step);
        if (isStopping() || session() !== s) break; // ended by us
        const code = failure('rendezvous', error, stats);
        report({ type: 'stuck', session: s, code });
        break;
      }
      mgr.cleanup(step);
      await sleep(Math.max(0, began + period - Date.now()));
    }
  }
}

void main();
