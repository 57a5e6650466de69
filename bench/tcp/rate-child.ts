// Child-process entry of the rate rows: the receiver, or one of the senders.
//   node rate-child.js receiver '{"progress":"loop"}'
//   node rate-child.js sender '{"progress":"loop","index":3}' tcp://HOST:PORT
import { senderRole, serveChild } from '../common/child';
import { RateChildSpec } from './rate-config';
import { RateReceiver } from './rate-receiver';
import { RateSender } from './rate-sender';

serveChild(async (role, variant, address) => {
  const spec = variant as unknown as RateChildSpec;
  const progress = spec.progress ?? 'loop';
  if (role === 'receiver') return RateReceiver.create(progress);
  return senderRole(address!, await RateSender.create(progress, address!, spec.index ?? 0));
});
