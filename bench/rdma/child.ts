// Child-process entry of bench:rdma: the receiver or the sender of a mailbox or raw-write
// variant over provider 'verbs'. Both listen on the guest's rxe address, as peers do there.
//   node child.js receiver '<variant json>'
//   node child.js sender '<variant json>' rdma://IP:PORT
import { type EndpointOptions } from '../../src';
import { senderRole, serveChild } from '../common/child';
import { EndpointReceiver } from '../common/endpoint-receiver';
import { EndpointSender } from '../common/endpoint-sender';
import { type Variant } from '../common/protocol';
import { ADDRESS } from './config';

function options(variant: Variant): EndpointOptions {
  return { provider: 'verbs', listen: `rdma://${ADDRESS}:0`, progress: variant.progress ?? 'loop', verbs: variant.verbs };
}

serveChild(async (role, variant, address) => {
  if (role === 'receiver') return EndpointReceiver.create(variant, options(variant));
  return senderRole(address!, await EndpointSender.create(variant, options(variant), address!));
});
