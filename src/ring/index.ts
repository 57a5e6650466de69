export { Ring } from './ring';
export type { RecvOptions, RingEvents, RingFailure, RingStats, SendControlOptions } from './ring';
export type { RingFrame } from './inbound';
export type { RingControlMessage } from './generation';
export type { LayerRange, RingControl } from './records';
export type { RingJoinOptions, RingReformOptions } from './options';
