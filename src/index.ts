// rvma: RVMA mailboxes over RDMA-style transports, a TensorFlow-style tensor rendezvous on
// top, and the directories that let nodes find each other.
export * from './mailbox';
export * from './tensor';
export * from './rendezvous';
export * from './ring';
export * from './directory';
