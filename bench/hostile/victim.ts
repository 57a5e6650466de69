// The endpoint an attack in run.ts is measured against: a tcp listener with the options in
// argv[2] (JSON), which prints its address and serves until it is killed.
import { Endpoint } from '../../src';

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}');
  const endpoint = await Endpoint.create({ provider: 'tcp', listen: 'tcp://127.0.0.1:0', ...options });
  endpoint.on('protocolError', (info) => process.stdout.write(`${JSON.stringify({ protocolError: info.message })}\n`));
  process.stdout.write(`${JSON.stringify({ address: endpoint.address })}\n`);
  setInterval(() => {}, 1 << 30); // serve until killed
}

void main();
