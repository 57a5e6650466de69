// bench:auth's tcp receiver in a forked process of its own (the "tcp, 2 processes" rows).
import { serveChild } from '../common/child';
import { type Auth, Receiver } from './measure';

// node child.js receiver '{"id":"none"|"auth",...}': the variant's id says without or with auth.
serveChild(async (_role, variant) => {
  const receiver = await Receiver.create('tcp', variant.id as Auth, 'tcp://127.0.0.1:0');
  return { address: receiver.address, close: () => receiver.close() };
});
