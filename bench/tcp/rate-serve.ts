// What a rate child process runs, whichever bench started it: the receiver or one sender, on
// the Endpoint options its bench's child entry gives for the progress mode it was started with.
import { type EndpointOptions, type ProgressMode } from '../../src';
import { senderRole, serveChild } from '../common/child';
import { type RateChildSpec } from './rate-config';
import { RateReceiver } from './rate-receiver';
import { RateSender } from './rate-sender';

export interface RateEndpoints {
  receiver: EndpointOptions;
  sender: EndpointOptions;
  /** The receiver also serves the net.Socket row. */
  net: boolean;
}

export function serveRateChild(endpoints: (progress: ProgressMode) => RateEndpoints): void {
  serveChild(async (role, variant, address) => {
    const spec = variant as unknown as RateChildSpec;
    const options = endpoints(spec.progress ?? 'loop');
    if (role === 'receiver') return RateReceiver.create(options.receiver, options.net);
    return senderRole(address!, await RateSender.create(options.sender, address!, spec.index ?? 0));
  });
}
