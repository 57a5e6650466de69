// Child-process entry: plays the receiver or the sender of one variant (mailbox, raw, net)
// and answers the orchestrator's requests over IPC.
//   node child.js receiver '<variant json>'
//   node child.js sender '<variant json>' tcp://HOST:PORT
import { EndpointReceiver } from './endpoint-receiver';
import { EndpointSender } from './endpoint-sender';
import { NetReceiver } from './net-receiver';
import { NetSender } from './net-sender';
import { Hello, Measurement, Received, Reply, Request, Scenario, Target, Variant } from './protocol';

interface Role {
  address: string;
  prepare?(s: Scenario): Target;
  run?(s: Scenario, t: Target): Promise<Measurement>;
  finish?(expected: number): Promise<Received>;
  close(): Promise<void>;
}

async function start(role: string, variant: Variant, address: string | undefined): Promise<Role> {
  const net = variant.transport === 'net';
  if (role === 'receiver') return net ? NetReceiver.create() : EndpointReceiver.create(variant);
  if (role !== 'sender' || !address) throw new Error('usage: child.js receiver|sender VARIANT [ADDRESS]');
  const sender = net ? await NetSender.create(address) : await EndpointSender.create(variant, address);
  return { address, run: (s, t) => sender.run(s, t), close: () => sender.close() };
}

/** CPU time (user + system, all threads) since `from`, in ns. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) * 1000;
}

let preparedAt = process.cpuUsage();

async function handle(role: Role, req: Request): Promise<unknown> {
  switch (req.cmd) {
    case 'prepare':
      preparedAt = process.cpuUsage();
      return role.prepare!(req.scenario);
    case 'run': {
      const from = process.cpuUsage();
      const m = await role.run!(req.scenario, req.target);
      return { ...m, senderCpuNs: cpuSince(from) } satisfies Measurement;
    }
    case 'finish': {
      const got = await role.finish!(req.expected);
      return { ...got, cpuNs: cpuSince(preparedAt) } satisfies Received;
    }
    case 'exit':
      await role.close();
      setImmediate(() => process.exit(0));
      return null;
  }
}

async function main(): Promise<void> {
  const [role, variantJson, address] = process.argv.slice(2);
  const it = await start(role, JSON.parse(variantJson) as Variant, address);
  process.on('disconnect', () => process.exit(0));
  process.on('message', (req: Request) => {
    handle(it, req).then(
      (value) => process.send!({ id: req.id, ok: true, value } satisfies Reply),
      (error: unknown) => {
        const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
        process.send!({ id: req.id, ok: false, error: text } satisfies Reply);
      },
    );
  });
  process.send!({ ready: true, address: it.address } satisfies Hello);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
