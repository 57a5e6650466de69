// Child-process entry of bench:tcp's rate rows: the receiver, or one of the senders, over tcp.
//   node rate-child.js receiver '{"progress":"loop"}'
//   node rate-child.js sender '{"progress":"loop","index":3}' tcp://HOST:PORT
import { serveRateChild } from './rate-serve';

serveRateChild((progress) => ({
  receiver: { listen: 'tcp://127.0.0.1:0', provider: 'tcp', progress },
  sender: { provider: 'tcp', progress },
  net: true,
}));
