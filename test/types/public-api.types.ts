// What the public types accept and refuse, checked by the compiler only (public-api.test.ts runs
// it strict, as an application would): u64 arguments as number or bigint, and typed events.
// Nothing here runs.
import { type Endpoint, type PeerLostInfo, type PutCounter, type PutFailure, type RendezvousMgr, type Ring, type RingFailure, type U64 } from '../../src';

export function u64Arguments(ep: Endpoint, counter: PutCounter, mgr: RendezvousMgr, data: Uint8Array): void {
  const mailbox = ep.openMailbox(0x10000);
  ep.openMailbox(0x10000n);
  void ep.put('node', 0x10000, data);
  void ep.put('node', 0x10000n, data);
  ep.put('node', 0x10000, data, { counter });
  void ep.rawWrite('node', 1, 0, data);
  void ep.rawWrite('node', 1n, 0n, data);
  void ep.bindName('name', 0x10000);
  mailbox.post(64, { threshold: 1 });
  mgr.find(1);
  mgr.cleanup(1n);
  const given: U64 = 7;
  ep.openMailbox(given);
  // What the library hands back stays a bigint.
  const vaddr: bigint = mailbox.vaddr;
  void vaddr;

  // @ts-expect-error a vaddr is not a string
  ep.openMailbox('0x10000');
  // @ts-expect-error a vaddr is not a string
  void ep.put('node', '0x10000', data);
}

export function typedEvents(ep: Endpoint, counter: PutCounter, ring: Ring): void {
  ep.on('peerLost', (info) => {
    const nodeId: string = info.nodeId;
    void nodeId;
  });
  ep.once('protocolError', (info) => info.peer);
  ep.on('authFailed', (info) => info.message);
  ep.on('registrationLost', (info) => info.reason);
  const onLost = (info: PeerLostInfo): void => void info.reason;
  ep.on('peerLost', onLost);
  ep.off('peerLost', onLost);
  counter.on('failed', (failure: PutFailure) => failure.code);
  ring.on('failed', (failure: RingFailure) => failure.generation);

  // @ts-expect-error no such event
  ep.on('peerLots', (info) => info);
  // @ts-expect-error no such field
  ep.on('peerLost', (info) => info.nodeIdd);
  // @ts-expect-error no such event
  counter.on('fialed', (failure) => failure);
  // @ts-expect-error no such field
  counter.on('failed', (failure) => failure.indx);
  // @ts-expect-error no such event
  ring.on('fail', (failure) => failure);
  // @ts-expect-error no such field
  ring.on('failed', (failure) => failure.generaton);
  // @ts-expect-error a listener of another event's argument
  ep.on('peerLost', (failure: RingFailure) => failure.lost);
}
