// Child-process entry of bench:shm: the receiver or the sender of a mailbox or raw-write variant
// over provider 'shm' (or 'tcp' on loopback, for contrast), as a user would set them up.
//   node child.js receiver '<variant json>'
//   node child.js sender '<variant json>' shm://NAME | tcp://127.0.0.1:PORT
import { type EndpointOptions } from '../../src';
import { senderRole, serveChild } from '../common/child';
import { EndpointReceiver } from '../common/endpoint-receiver';
import { EndpointSender } from '../common/endpoint-sender';
import { type Variant } from '../common/protocol';

function options(variant: Variant): EndpointOptions {
  const provider = variant.provider ?? 'shm';
  return { provider, progress: variant.progress ?? 'loop', ...(provider === 'shm' ? { shm: variant.shm } : {}) };
}

serveChild(async (role, variant, address) => {
  if (role === 'receiver') {
    const listen = variant.provider === 'tcp' ? 'tcp://127.0.0.1:0' : `shm://rvma-bench-${process.pid}`;
    return EndpointReceiver.create(variant, { ...options(variant), listen });
  }
  return senderRole(address!, await EndpointSender.create(variant, options(variant), address!));
});
