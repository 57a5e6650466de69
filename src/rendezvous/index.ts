export { createKey, parseKey, taskOf } from './key';
export type { FrameIter, ParsedKey } from './key';
export { RendezvousMgr } from './mgr';
export type { RendezvousOptions } from './options';
export { Rendezvous } from './rendezvous';
export type { Received, TensorRecvOptions } from './rendezvous';
export type { RendezvousCounters } from './counters';
