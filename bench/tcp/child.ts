// Child-process entry of bench:tcp: the receiver or the sender of one variant (mailbox, raw, net).
//   node child.js receiver '<variant json>'
//   node child.js sender '<variant json>' tcp://HOST:PORT
import { senderRole, serveChild } from '../common/child';
import { EndpointReceiver } from '../common/endpoint-receiver';
import { EndpointSender } from '../common/endpoint-sender';
import { NetReceiver } from './net-receiver';
import { NetSender } from './net-sender';

serveChild(async (role, variant, address) => {
  const net = variant.transport === 'net';
  const progress = variant.progress ?? 'loop';
  if (role === 'receiver') {
    return net ? NetReceiver.create() : EndpointReceiver.create(variant, { listen: 'tcp://127.0.0.1:0', provider: 'tcp', progress });
  }
  const tcp = variant.stripes ? { stripes: variant.stripes } : undefined;
  const sender = net ? await NetSender.create(address!) : await EndpointSender.create(variant, { provider: 'tcp', progress, tcp }, address!);
  return senderRole(address!, sender);
});
