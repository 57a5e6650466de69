// The hostile process: runs the attacks the fault injector asks for (soak/hostile.ts), one at a
// time, and answers with what each saw. It is no endpoint role: it is not checked for hangs,
// and its descriptor count rises by design.
import { type AttackCommand, type FromHostile } from '../protocol';
import { type AttackResult, connectionFlood, neverReading, slowloris, tensorRequestFlood } from '../hostile';

const deadline = Number(process.argv[2] ?? Date.now() + 3_600_000);
const send = (m: FromHostile): void => void (process.connected && process.send!(m));
process.on('disconnect', () => process.exit(0));
// Ctrl-C reaches the whole process group: the harness decides when its processes end.
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
setTimeout(() => process.exit(0), Math.max(0, deadline - Date.now())).unref();
const fatal = (error: unknown): void => {
  send({ type: 'fatal', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  setTimeout(() => process.exit(1), 50);
};
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

function run(c: AttackCommand): Promise<AttackResult> {
  switch (c.kind) {
    case 'slowloris':
      return slowloris(c.victim, c.durationMs);
    case 'never-reading':
      return neverReading(c.victim, c.durationMs);
    case 'connection-flood':
      return connectionFlood(c.victim, c.durationMs, Math.min(4096, (c.victim.fdLimit ?? 1024) + 256));
    case 'tensor-request-flood':
      return tensorRequestFlood(c.victim, c.durationMs);
  }
}

let queue = Promise.resolve();
process.on('message', (c: AttackCommand) => {
  if (c.type !== 'attack') return;
  queue = queue.then(() =>
    run(c).then(
      (result) => send({ type: 'attackDone', id: c.id, result }),
      (error: unknown) => send({ type: 'attackDone', id: c.id, error: error instanceof Error ? error.message : String(error) }),
    ),
  );
});
send({ type: 'ready' });
