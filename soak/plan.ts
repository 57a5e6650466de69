// Which endpoint processes a soak of N (8 to 16) runs: two sinks (one taking puts over tcp, one
// over shm), several senders, a rendezvous producer/consumer pair per two extra processes, and a
// ring; progress modes alternate so each workload runs in both.
import type { Progress, RoleKind, Transport } from './protocol';

export interface RolePlan {
  role: string;
  kind: RoleKind;
  index: number;
  transport: Transport;
  progress: Progress;
  /** Rendezvous pair number (producer and consumer share it). */
  pair?: number;
  /** Ring group number. */
  group?: number;
}

export interface Plan {
  roles: RolePlan[];
  sinks: RolePlan[];
  senders: RolePlan[];
  pairs: { pair: number; producer: RolePlan; consumer: RolePlan; transport: Transport }[];
  rings: { group: number; members: RolePlan[]; transport: Transport }[];
}

/** Extra processes beyond the base 8, in the order they are added. */
const EXTRAS: ('ring' | 'sender' | 'pair')[] = ['ring', 'sender', 'sender', 'ring', 'pair', 'sender', 'ring'];

export function planFor(processes: number): Plan {
  let rings = 2;
  let senders = 2;
  let pairs = 1;
  let left = processes - 8;
  for (const extra of EXTRAS) {
    const cost = extra === 'pair' ? 2 : 1;
    if (left < cost) continue;
    left -= cost;
    if (extra === 'ring') rings++;
    else if (extra === 'sender') senders++;
    else pairs++;
  }
  const roles: RolePlan[] = [];
  let modes = 0;
  const progress = (): Progress => (modes++ % 2 === 0 ? 'loop' : 'thread');
  const sinks: RolePlan[] = [
    { role: 'sink-tcp', kind: 'sink', index: 0, transport: 'tcp', progress: progress() },
    { role: 'sink-shm', kind: 'sink', index: 1, transport: 'shm', progress: progress() },
  ];
  roles.push(...sinks);
  const senderRoles: RolePlan[] = [];
  // Senders are numbered after the sinks so that every role's index is unique.
  for (let i = 0; i < senders; i++) senderRoles.push({ role: `sender-${i}`, kind: 'sender', index: 100 + i, transport: 'tcp', progress: i % 2 === 0 ? 'thread' : 'loop' });
  roles.push(...senderRoles);
  const pairList: Plan['pairs'] = [];
  for (let p = 0; p < pairs; p++) {
    const transport: Transport = p % 2 === 0 ? 'tcp' : 'shm';
    const producer: RolePlan = { role: `producer-${p}`, kind: 'producer', index: 200 + 2 * p, transport, progress: p % 2 === 0 ? 'thread' : 'loop', pair: p };
    const consumer: RolePlan = { role: `consumer-${p}`, kind: 'consumer', index: 201 + 2 * p, transport, progress: p % 2 === 0 ? 'loop' : 'thread', pair: p };
    pairList.push({ pair: p, producer, consumer, transport });
    roles.push(producer, consumer);
  }
  const members: RolePlan[] = [];
  for (let m = 0; m < rings; m++) members.push({ role: `ring-${m}`, kind: 'ring', index: 300 + m, transport: 'shm', progress: m % 2 === 0 ? 'loop' : 'thread', group: 0 });
  roles.push(...members);
  return { roles, sinks, senders: senderRoles, pairs: pairList, rings: [{ group: 0, members, transport: 'shm' }] };
}
