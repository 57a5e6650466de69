// The hostile process seen from the harness: started once, given one attack at a time, each
// answered (or given up on) within the attack's duration plus a bound.
import * as path from 'node:path';
import type { AttackKind, AttackResult, Victim } from './hostile';
import type { AttackCommand, FromHostile } from './protocol';
import { ChildHandle } from './supervisor';

export interface AttackRecord {
  kind: AttackKind;
  victim: string;
  result: AttackResult | undefined;
  error?: string;
}

export class Attacker {
  private nextId = 0;
  private readonly waits = new Map<number, (m: FromHostile & { type: 'attackDone' }) => void>();

  private constructor(readonly handle: ChildHandle<FromHostile>) {}

  /** Starts the hostile process (it exits by itself after deadline) and waits until it is ready. */
  static async start(deadline: number, timeoutMs: number, onFatal: (message: string) => void): Promise<Attacker> {
    let attacker: Attacker | undefined;
    const handle = new ChildHandle<FromHostile>('hostile', path.join(__dirname, 'roles', 'hostile.js'), [String(deadline)], (m) => {
      if (m.type === 'attackDone') attacker?.waits.get(m.id)?.(m);
      if (m.type === 'fatal') onFatal(m.message);
    });
    attacker = new Attacker(handle);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the hostile process did not start')), timeoutMs);
      handle.proc.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return attacker;
  }

  get pid(): number | undefined {
    return this.handle.running ? this.handle.pid : undefined;
  }

  /** Runs one attack; resolves with what the attacker saw, or an error (never rejects). */
  attack(kind: AttackKind, victim: Victim, durationMs: number): Promise<AttackRecord> {
    const id = ++this.nextId;
    const boundMs = durationMs + 30_000;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waits.delete(id);
        resolve({ kind, victim: victim.role, result: undefined, error: `no answer within ${boundMs / 1000} s` });
      }, boundMs);
      this.waits.set(id, (m) => {
        clearTimeout(timer);
        this.waits.delete(id);
        resolve({ kind, victim: victim.role, result: m.result, error: m.error });
      });
      this.handle.send({ type: 'attack', id, kind, victim, durationMs } satisfies AttackCommand);
    });
  }

  kill(): Promise<void> {
    return this.handle.kill();
  }
}
