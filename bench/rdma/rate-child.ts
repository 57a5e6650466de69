// Child-process entry of bench:rdma's rate rows: the receiver, or the sender, over provider
// 'verbs'. Both listen on the guest's rxe address, as peers do there (child.ts).
//   node rate-child.js receiver '{"progress":"loop"}'
//   node rate-child.js sender '{"progress":"loop","index":0}' rdma://IP:PORT
import { serveRateChild } from '../tcp/rate-serve';
import { ADDRESS } from './config';

serveRateChild((progress) => {
  const verbs = { provider: 'verbs' as const, listen: `rdma://${ADDRESS}:0`, progress };
  return { receiver: verbs, sender: verbs, net: false };
});
