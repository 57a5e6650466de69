// Child-process side of the orchestrator's IPC: a benchmark's child.js builds its receiver or
// sender and hands it to serveChild, which answers the orchestrator's requests.
import { type Hello, type Measurement, type Received, type Reply, type Request, type Scenario, type Target, type Variant } from './protocol';

/** A receiver (prepare, finish) or a sender (run) of one variant. */
export interface Role {
  address: string;
  prepare?(s: Scenario): Target;
  run?(s: Scenario, t: Target): Promise<Measurement>;
  finish?(expected: number): Promise<Received>;
  close(): Promise<void>;
}

/** Builds the role named on the command line; address is the receiver's, for senders. */
export type StartRole = (role: string, variant: Variant, address: string | undefined) => Promise<Role>;

/** A sender as a Role: it only runs scenarios. */
export function senderRole(
  address: string,
  sender: { run(s: Scenario, t: Target): Promise<Measurement>; close(): Promise<void> },
): Role {
  return { address, run: (s, t) => sender.run(s, t), close: () => sender.close() };
}

/** CPU time (user + system, all threads) since `from`, in ns. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) * 1000;
}

/** Voluntary context switches of every thread of this process: its sleeps, so its wake-ups. */
function wakeups(): number {
  return process.resourceUsage().voluntaryContextSwitches;
}

let preparedAt = process.cpuUsage();
let preparedWakeups = wakeups();

async function handle(role: Role, req: Request): Promise<unknown> {
  switch (req.cmd) {
    case 'prepare':
      preparedAt = process.cpuUsage();
      preparedWakeups = wakeups();
      return role.prepare!(req.scenario);
    case 'run': {
      const from = process.cpuUsage();
      const woken = wakeups();
      const m = await role.run!(req.scenario, req.target);
      return { ...m, senderCpuNs: cpuSince(from), senderWakeups: wakeups() - woken } satisfies Measurement;
    }
    case 'finish': {
      const got = await role.finish!(req.expected);
      return { ...got, cpuNs: cpuSince(preparedAt), wakeups: wakeups() - preparedWakeups } satisfies Received;
    }
    case 'exit':
      await role.close();
      setImmediate(() => process.exit(0));
      return null;
  }
}

async function serve(start: StartRole): Promise<void> {
  const [role, variantJson, address] = process.argv.slice(2);
  if (role !== 'receiver' && (role !== 'sender' || !address)) {
    throw new Error('usage: child.js receiver VARIANT | child.js sender VARIANT ADDRESS');
  }
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

/** Runs this process as a child of Pair.start until the orchestrator says exit or goes away. */
export function serveChild(start: StartRole): void {
  serve(start).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
