// rvma: RVMA mailboxes over RDMA-style transports.
export * from './mailbox';
