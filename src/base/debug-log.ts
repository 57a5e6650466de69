// NODE_DEBUG=rvma: one line per connect, refusal, peer loss and directory lease event on stderr
// (util.debuglog, "RVMA <pid>: ..."). The native transports write their lines (handshakes,
// reconnects) in the same form. Off by default; a call site tests `enabled` before it builds a line.
import { debuglog } from 'node:util';

export const debugLog = debuglog('rvma');
