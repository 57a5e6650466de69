export { Endpoint } from './endpoint';
export { allocBuffer, bufferPoolStats, setArenaLimit, setBufferPoolLimit } from './alloc';
export type { BufferPoolStats } from './alloc';
export type {
  Capabilities,
  RdmaDevice,
  RdmaPort,
  RegionOptions,
  EndpointOptions,
  EndpointStats,
  MailboxOptions,
  ProgressMode,
  PeerInfo,
  PeerLostInfo,
  ProtocolErrorInfo,
  AuthFailedInfo,
  AuthOptions,
  ProviderName,
  PutData,
  CountedPutOptions,
  PutOptions,
  RegistrationStats,
  ShmOptions,
  TcpOptions,
  EndpointEvents,
} from './endpoint';
export type { VerbsOptions } from './verbs-options';
export type { SenderWrites } from './shm-options';
export { Mailbox } from './mailbox';
export { Region } from './region';
export { PutCounter } from './put-counter';
export type { PutCounterEvents, PutCounterState, PutFailure } from './put-counter';
export type { RawWrite } from './region';
export type { EpochType, PostOptions } from './mailbox';
export type { Completion } from './completion';
export type { CompletionWordsSnapshot } from './completion-words';
export { RvmaError } from '../base/errors';
export type { RvmaErrorCode } from '../base/errors';
export type { WaitOptions } from '../base/wait';
export type { U64 } from '../base/validate';
