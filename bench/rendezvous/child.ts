// Child-process entry of bench:rendezvous (node child.js receiver|sender '{"cluster":..}' redis://..): the
// consumer (task 1, 'receiver') or the producer (task 0, 'sender') of every variant, found through Redis.
import { type Role, serveChild } from '../common/child';
import { type Scenario, type Target } from '../common/protocol';
import { CONSUMER_TASK, PRODUCER_TASK, type StepScenario, type StepTarget } from './config';
import { Consumer } from './consumer';
import { Peer } from './peer';
import { Producer } from './producer';
import { installProbe } from './probe';

serveChild(async (role, variant, url): Promise<Role> => {
  const { cluster } = variant as unknown as { cluster: string };
  if (process.env.RVMA_BENCH_PROBE) installProbe(process.env.RVMA_BENCH_PROBE);
  if (role === 'receiver') {
    const consumer = new Consumer(await Peer.create(CONSUMER_TASK, url!, cluster));
    return {
      address: consumer.address,
      prepare: (s: Scenario): Target => consumer.prepare(s as StepScenario),
      finish: () => consumer.finish(),
      close: () => consumer.close(),
    };
  }
  const producer = await Producer.create(await Peer.create(PRODUCER_TASK, url!, cluster));
  return {
    address: producer.endpoint.address,
    run: (s, t) => producer.run(s as StepScenario, t as StepTarget),
    close: () => producer.close(),
  };
});
