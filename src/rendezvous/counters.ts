/** What ran, so tests and users can see which path each transfer took. */
export interface RendezvousCounters {
  /** TENSOR_REQUESTs sent (receiver side). */
  requests: number;
  /** META_DATA_RESPONSEs received (receiver side): the cached meta was missing or stale. */
  metaResponses: number;
  /** TENSOR_RE_REQUESTs sent (receiver side). */
  reRequests: number;
  /** Contents put straight to the receiver's mailbox because its cached meta matched (sender side). */
  directPuts: number;
  /** Contents put after a re-request (sender side). */
  clonePuts: number;
  /** ERROR_STATUS messages received (receiver side). */
  errors: number;
  /** Requests withdrawn because their receiver gave up (sender side): the tensor stayed for the next recv. */
  withdrawn: number;
  /** Control messages dropped because they claimed to come from another node than the one they came from. */
  forged: number;
  /** Contents put into the receiver's push mailbox, without a request (sender side). */
  pushes: number;
  /** Pushed contents received (receiver side). */
  pushesReceived: number;
  /** Sends of a pushed key kept for a request instead (another meta, a full or closed push mailbox; sender side). */
  notPushed: number;
  /** Requests refused with ERR_RVMA_OVERFLOW: their peer already had maxRequestsPerPeer held here (sender side). */
  refused: number;
  /** Answers held by no request (refusals, errors, push acceptances) not sent: maxRequestsPerPeer of them to that peer were not accepted yet. */
  unsent: number;
  bytesSent: number;
  bytesReceived: number;
}

export function newCounters(): RendezvousCounters {
  return { requests: 0, metaResponses: 0, reRequests: 0, directPuts: 0, clonePuts: 0, errors: 0, withdrawn: 0, forged: 0, pushes: 0, pushesReceived: 0, notPushed: 0, refused: 0, unsent: 0, bytesSent: 0, bytesReceived: 0 };
}
