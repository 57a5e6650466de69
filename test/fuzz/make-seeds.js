// Writes the seed corpus of the libFuzzer harnesses (test/fuzz/corpus/<harness>/): valid
// messages of every kind, so mutation starts from the protocol rather than from noise.
// Run it after a wire change: node test/fuzz/make-seeds.js (the files are kept in the repo).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, 'corpus');

// --- tcp frames (docs/protocol.md) ---
const TCP_MAGIC = 0x414d5652;
const TCP_VERSION = 7;
const T = { Put: 1, Ack: 2, Nack: 3, Ping: 4, Pong: 5, Error: 6, RawWrite: 7, Floor: 8, Window: 9, Acks: 10 };

function hello(nodeId, address = '', flags = 0) {
  const fixed = Buffer.alloc(32);
  fixed.writeUInt32LE(TCP_MAGIC, 0);
  fixed.writeUInt16LE(TCP_VERSION, 4);
  fixed.writeUInt16LE(Buffer.byteLength(nodeId), 6);
  fixed.writeBigUInt64LE(1n, 8);
  fixed.writeUInt16LE(Buffer.byteLength(address), 16);
  fixed.writeUInt16LE(flags, 18);
  return Buffer.concat([fixed, Buffer.alloc(32, 0x40), Buffer.from(nodeId), Buffer.from(address)]);
}

function header({ type, flags = 0, status = 0, parts = 0, id = 0n, vaddr = 0n, offset = 0n, len = 0n }) {
  const b = Buffer.alloc(40);
  b[0] = type;
  b[1] = flags;
  b.writeUInt16LE(status, 2);
  b.writeUInt32LE(parts, 4);
  b.writeBigUInt64LE(BigInt(id), 8);
  b.writeBigUInt64LE(BigInt(vaddr), 16);
  b.writeBigUInt64LE(BigInt(offset), 24);
  b.writeBigUInt64LE(BigInt(len), 32);
  return b;
}

const put = (id, vaddr, offset, payload, flags = 0) =>
  Buffer.concat([header({ type: T.Put, flags, id, vaddr, offset, len: payload.length }), payload]);

function part(id, vaddr, parts, offset, payload, putOffset, putLen) {
  const ext = Buffer.alloc(16);
  ext.writeBigUInt64LE(BigInt(putOffset), 0);
  ext.writeBigUInt64LE(BigInt(putLen), 8);
  return Buffer.concat([header({ type: T.Put, parts, id, vaddr, offset, len: payload.length }), ext, payload]);
}

// The region's key is random: the tcp harness replaces these 8 bytes with it.
const REGION = Buffer.from('REGION#1').readBigUInt64LE(0);
const raw = (id, offset, payload, flags = 0) =>
  Buffer.concat([header({ type: T.RawWrite, flags, id, vaddr: REGION, offset, len: payload.length }), payload]);
const LAZY_ACK = 2;
const LATE_ACK = 4; // only with LAZY_ACK

const BYTES_BOX = 0x10000n;
const OPS_BOX = 0x10001n;
const SMALL_BOX = 0x10002n;
const fill = (n, v) => Buffer.alloc(n, v);

const frames = {
  hello: hello('node-a', 'tcp://127.0.0.1:4000'),
  helloAuth: hello('node-b', '', 1),
  put: put(1n, BYTES_BOX, 0n, fill(16, 1)),
  append: put(2n, OPS_BOX, 0n, fill(8, 2), 1),
  lazyAppend: put(2n, OPS_BOX, 0n, fill(8, 2), 1 | LAZY_ACK),
  lazyRaw: raw(4n, 0n, fill(8, 4), LAZY_ACK),
  lateAppend: put(3n, OPS_BOX, 0n, fill(8, 3), 1 | LAZY_ACK | LATE_ACK),
  lateRaw: raw(5n, 0n, fill(8, 5), LAZY_ACK | LATE_ACK),
  part: part(3n, OPS_BOX, 2, 4096n, fill(8, 3), 0n, 8192n),
  ack: header({ type: T.Ack, id: 1n }),
  acks: header({ type: T.Acks, id: 3n, offset: 3n }),
  nack: header({ type: T.Nack, id: 1n, status: 2 }),
  ping: header({ type: T.Ping }),
  pong: header({ type: T.Pong }),
  error: Buffer.concat([header({ type: T.Error, len: 4n }), Buffer.from('oops')]),
  raw: raw(4n, 0n, fill(8, 4)),
  floor: header({ type: T.Floor, id: 5n }),
  window: header({ type: T.Window, id: 1n }),
  ambiguous: header({ type: T.Nack, id: 1n, status: 12 }),
  forbidden: header({ type: T.Nack, id: 1n, status: 13 }),
};

// tcp stream harness: byte 0 = connections, then ops (see fuzz_tcp_stream.cpp).
function write(conn, bytes) {
  const out = [];
  for (let at = 0; at < bytes.length; at += 256) {
    const chunk = bytes.subarray(at, at + 256);
    out.push(Buffer.from([(0 << 2) | conn, chunk.length - 1]), chunk);
  }
  return Buffer.concat(out);
}
const RUN = Buffer.from([48 << 2]);
const close = (conn) => Buffer.from([(56 << 2) | conn]);
const ours = (conn) => Buffer.from([(60 << 2) | conn]);
const stream = (setup, ...ops) => Buffer.concat([Buffer.from([setup]), ...ops]);

const big = fill(3000, 9);
const streams = {
  puts: stream(0, write(0, Buffer.concat([put(1n, BYTES_BOX, 0n, fill(100, 1)), put(2n, BYTES_BOX, 100n, fill(156, 2))])), RUN),
  appends: stream(0, write(0, Buffer.concat([1, 2, 3, 4].map((i) => put(BigInt(i), OPS_BOX, 0n, fill(10 * i, i), 1)))), RUN),
  refusals: stream(
    0,
    write(0, Buffer.concat([put(1n, 0x999n, 0n, fill(8, 1)), put(2n, SMALL_BOX, 10n, fill(8, 2)), put(3n, SMALL_BOX, 0n, fill(32, 3))])),
    RUN,
  ),
  split: stream(
    1,
    write(0, part(7n, OPS_BOX, 2, 0n, big, 0n, 6000n)),
    write(1, part(7n, OPS_BOX, 2, 3000n, big, 0n, 6000n)),
    RUN,
  ),
  splitOverflow: stream(
    1,
    write(0, Buffer.concat([part(8n, OPS_BOX, 2, 0n, fill(100, 1), 0n, 100n), part(8n, OPS_BOX, 2, 0n, fill(100, 2), 0n, 100n), header({ type: T.Ping })])),
    RUN,
  ),
  splitLost: stream(1, write(0, part(9n, OPS_BOX, 2, 0n, fill(64, 1), 0n, 128n)), close(0), write(1, part(9n, OPS_BOX, 2, 64n, fill(64, 2), 0n, 128n)), RUN),
  twoNodes: stream(
    5,
    write(0, part(10n, OPS_BOX, 2, 0n, fill(32, 1), 0n, 64n)),
    write(1, part(10n, OPS_BOX, 2, 32n, fill(32, 2), 0n, 64n)),
    RUN,
  ),
  answers: stream(0, ours(0), write(0, Buffer.concat([header({ type: T.Ack, id: 1n }), header({ type: T.Nack, id: 2n, status: 1 })])), RUN),
  acksRun: stream(0, ours(0), ours(0), ours(0), write(0, Buffer.concat([header({ type: T.Acks, id: 2n, offset: 2n }), header({ type: T.Ack, id: 3n })])), RUN),
  acksUnsent: stream(0, ours(0), write(0, header({ type: T.Acks, id: 2n, offset: 2n })), RUN),
  raw: stream(0, write(0, Buffer.concat([raw(1n, 0n, fill(64, 5)), raw(2n, 4090n, fill(8, 6))])), RUN),
  // Lazy acks wait for an eager one, which answers the run.
  lazy: stream(
    0,
    write(0, Buffer.concat([1, 2, 3].map((i) => put(BigInt(i), OPS_BOX, 0n, fill(8, i), 1 | LAZY_ACK)))),
    RUN,
    write(0, Buffer.concat([raw(4n, 0n, fill(8, 4), LAZY_ACK), put(5n, BYTES_BOX, 0n, fill(8, 5))])),
    RUN,
  ),
  keepalive: stream(0, write(0, Buffer.concat([header({ type: T.Ping }), header({ type: T.Pong })])), RUN),
  floor: stream(1, write(0, Buffer.concat([put(1n, BYTES_BOX, 0n, fill(8, 1)), header({ type: T.Floor, id: 2n })])), RUN, write(1, put(1n, BYTES_BOX, 0n, fill(8, 1))), RUN),
  resend: stream(1, write(0, put(3n, OPS_BOX, 0n, fill(8, 1), 1)), RUN, close(0), write(1, put(3n, OPS_BOX, 0n, fill(8, 1), 1)), RUN),
  windowFromPeer: stream(0, ours(0), write(0, Buffer.concat([header({ type: T.Window, id: 1n }), header({ type: T.Nack, id: 1n, status: 12 })])), RUN),
  error: stream(0, write(0, frames.error), RUN),
};
// The same traffic from peers that authenticate (setup bit 3), fail to (bit 4: a wrong
// proof), or disagree about authenticating (bit 5).
for (const name of ['puts', 'appends', 'raw', 'answers', 'split']) {
  for (const [suffix, bits] of [['Auth', 8], ['AuthWrongProof', 8 | 16], ['AuthMismatch', 32]]) {
    const seed = Buffer.from(streams[name]);
    seed[0] |= bits;
    streams[name + suffix] = seed;
  }
}

// --- verbs control messages (native/providers/verbs/verbs_wire.h) ---
const V_MAGIC = 0x52564d56;
const V_VERSION = 6;
const V = { Hello: 1, Rts: 2, Ack: 3, RegionQuery: 4, RegionInfo: 5, Raw: 6, Revoke: 7, RevokeAck: 8, Ping: 9, Pong: 10, Auth: 11, Acks: 12 };
const V_HELLO_AUTH = 1;

function ctrl(type, size, status = 0) {
  const b = Buffer.alloc(size);
  b.writeUInt32LE(V_MAGIC, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(status, 6);
  return b;
}
function verbsHello(nodeId, flags = 0) {
  const b = ctrl(V.Hello, 88);
  b.writeUInt16LE(V_VERSION, 8);
  b.writeUInt16LE(Buffer.byteLength(nodeId), 10);
  b.writeUInt32LE(64, 12); // slots
  b.writeUInt32LE(8192, 16); // slotBytes
  b.writeUInt32LE(0x1234, 20); // ringRkey
  b.writeBigUInt64LE(1n, 24); // incarnation
  b.writeBigUInt64LE(0x7f0000000000n, 32); // ringAddr
  b.writeUInt16LE(4000, 40); // listenPort
  b.writeUInt16LE(flags, 42); // flags (V_HELLO_AUTH)
  b.writeBigUInt64LE(1n << 32n, 48); // maxPutBytes
  if (flags & V_HELLO_AUTH) b.fill(0xa5, 56, 88); // nonce
  return Buffer.concat([b, Buffer.from(nodeId)]);
}
function verbsAuth() {
  const b = ctrl(V.Auth, 40);
  b.fill(0x5a, 8, 40); // proof
  return b;
}
// head: the put's first bytes carried in the message (flag 2), as for a gathered put.
function rts(head = Buffer.alloc(0)) {
  const b = ctrl(V.Rts, 56);
  b.writeUInt32LE(1 | (head.length ? 2 : 0), 8);
  b.writeUInt32LE(0x55, 12);
  b.writeBigUInt64LE(1n, 16);
  b.writeBigUInt64LE(0x10000n, 24);
  b.writeBigUInt64LE(0n, 32);
  b.writeBigUInt64LE(1n << 20n, 40);
  b.writeBigUInt64LE(0x7f0000001000n, 48);
  return Buffer.concat([b, head]);
}
function eager(len) {
  const b = Buffer.alloc(32 + len, 7);
  b.writeBigUInt64LE(1n, 0);
  b.writeBigUInt64LE(0x10000n, 8);
  b.writeBigUInt64LE(0n, 16);
  b.writeUInt32LE(len, 24);
  b.writeUInt32LE(0, 28);
  return b;
}
// A round's answers: count entries of { putId, slot, status }.
function acks(count, status = 0) {
  const b = ctrl(V.Acks, 16 + 16 * count);
  b.writeUInt32LE(count, 8);
  for (let i = 0; i < count; i++) {
    b.writeBigUInt64LE(BigInt(i + 1), 16 + 16 * i);
    b.writeUInt32LE(i, 24 + 16 * i);
    b.writeUInt16LE(status, 28 + 16 * i);
  }
  return b;
}
// Byte 0 of a verbs seed: bit 0 = hello received, bit 1 = the peer's proof still awaited,
// bits 2-4 = the landing slot.
const withState = (helloReceived, slot, msg, awaitingProof = false) =>
  Buffer.concat([Buffer.from([(helloReceived ? 1 : 0) | (awaitingProof ? 2 : 0) | (slot << 2)]), msg]);
const verbs = {
  hello: withState(false, 0, verbsHello('node-a')),
  helloAuth: withState(false, 0, verbsHello('node-a', V_HELLO_AUTH)),
  auth: withState(true, 0, verbsAuth(), true),
  authTwice: withState(true, 0, verbsAuth()),
  rtsBeforeProof: withState(true, 0, rts(), true),
  rts: withState(true, 0, rts()),
  rtsHead: withState(true, 0, rts(fill(8, 0x48))),
  ack: withState(true, 0, ctrl(V.Ack, 24)),
  acks: withState(true, 0, acks(3)),
  acksFull: withState(true, 0, acks(31, 2)),
  regionQuery: withState(true, 0, ctrl(V.RegionQuery, 16)),
  regionInfo: withState(true, 0, ctrl(V.RegionInfo, 40)),
  raw: withState(true, 0, ctrl(V.Raw, 40)),
  revoke: withState(true, 0, ctrl(V.Revoke, 16)),
  revokeAck: withState(true, 0, ctrl(V.RevokeAck, 16)),
  ping: withState(true, 0, ctrl(V.Ping, 8)),
  pong: withState(true, 0, ctrl(V.Pong, 8)),
  eager: withState(true, 2, eager(40)),
};

// --- shm rings and hellos (test/fuzz/fuzz_shm.cpp's operations; native/providers/shm) ---
const le = (n, bytes) => {
  const b = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) b[i] = Number((BigInt(n) >> BigInt(8 * i)) & 0xffn);
  return b;
};
// op 1: kind byte (record type = kind % 13; 10: an arena share, 11: Written, 12: Grant), flags, mailbox choice (0 bytes box,
// 1 ops box, 2 region, 3 guarded box, 5 arena box: its buffers lie in the provider's arena), offset (2 bytes)
const record = (kind, flags, box, offset, ...rest) => Buffer.concat([Buffer.from([1, kind, flags, box]), le(offset, 2), ...rest]);
const shmPut = (box, offset, payload, flags = 0) => record(0, flags, box, offset, le(payload.length, 2), payload);
const shmFar = (box, len, srcOffset, flags = 0) => record(1, flags, 0 + box, 0, le(len - 1, 3), le(srcOffset, 2));
// Arena shares (kind 10), by variant: 0 ours, 1 unsealed, 2 another size, 3 two fds, 4 none,
// 5 garbage bytes (32 follow), 6 an eventfd, 7 a hole punched in ours (page number: 2 bytes).
const shmShare = (variant, ...rest) => record(10, 0, 0, 0, Buffer.from([variant]), ...rest);
const ARENA = 16; // the arena flag of a far put (shm_layout.h)
const shmFarGather = (box, headLen, restLen, srcOffset) =>
  record(9, 0, box, 0, le(headLen, 2), le(restLen, 3), le(srcOffset, 2), fill(headLen, 7));
const shmChunk = (box, len, chunkLen) => record(2, 0, box, 0, le(len - 1, 3), le(chunkLen - 1, 2), fill(chunkLen, 3));
const shmAck = (status) => Buffer.concat([Buffer.from([1, 3, 0, 0]), le(0, 2), Buffer.from([status])]);
const SHM = { run: Buffer.from([5]), consume: Buffer.from([3]), own: Buffer.from([4]), ownFar: Buffer.from([12]), hangUp: Buffer.from([6]) };
const ARENA_BOX = 5;
// Written (kind 11) for our last far put, or (0x40) for the id in the next 8 bytes.
const shmWritten = (id) => (id === undefined ? record(11, 0, 0, 0) : record(11 | 0x40, 0, 0, 0, le(id, 8)));
// Grant (kind 12) for the provider's latest put, at this offset of our arena (2 bytes), of its length.
const shmGrant = (arenaOffset) => record(12, 0, 0, 0, le(arenaOffset, 2));
const shmSession = (setup, ...ops) => Buffer.concat([Buffer.from([setup]), ...ops]);
// The setup byte's bits (fuzz_shm.cpp): 1 cma, 2 we claim pull, 4 the provider has a secret,
// 8 we authenticate (a 32-byte nonce follows), 16 our proof is right (else 32 bytes follow),
// 32 we refuse, 64 operations before our Confirm (a count byte, then the operations).
const AUTH = { provider: 4, us: 8, right: 16, refuse: 32, early: 64 };
const nonce = fill(32, 0x6e);
const wrongProof = fill(32, 0x77);
const early = (...ops) => Buffer.concat([Buffer.from([ops.length]), ...ops]);
// Flags: 1 can pull, 2 auth, 4 refused. Auth bytes follow the 48 fixed ones where the flags
// and the kind say so (shm_hello.h): the nonce in Offer and Accept, the proof in Accept and Confirm.
const SHM_HELLO = { canPull: 1, auth: 2, refused: 4 };
const SHM_VERSION = 8;
function shmHello(kind, nodeId, ringBytes, flags = kind === 1 ? 0 : SHM_HELLO.canPull) {
  const b = Buffer.alloc(48);
  b.writeUInt32LE(0x48535652, 0);
  b.writeUInt16LE(SHM_VERSION, 4);
  b.writeUInt16LE(kind, 6);
  b.writeUInt32LE(flags, 8);
  b.writeUInt32LE(Buffer.byteLength(nodeId), 12);
  b.writeBigUInt64LE(5n, 16);
  b.writeBigUInt64LE(BigInt(ringBytes), 24);
  b.writeBigUInt64LE(0x7f0000001000n, 32);
  b.writeBigUInt64LE(42n, 40);
  const authenticating = (flags & SHM_HELLO.auth) !== 0 && (flags & SHM_HELLO.refused) === 0;
  const extra = [];
  if (authenticating && kind !== 3) extra.push(nonce);
  if (authenticating && kind !== 1) extra.push(fill(32, 0x70));
  return Buffer.concat([Buffer.from([0x80]), b, ...extra, Buffer.from(nodeId)]);
}
const shm = {
  puts: shmSession(3, shmPut(0, 0, fill(100, 1)), shmPut(0, 100, fill(156, 2)), SHM.run),
  appends: shmSession(3, shmPut(1, 0, fill(10, 1), 1), shmPut(1, 0, fill(20, 2), 1), shmPut(1, 0, fill(30, 3), 1), SHM.run),
  raw: shmSession(3, shmPut(2, 10, fill(64, 5), 2), SHM.run),
  far: shmSession(1, shmFar(1, 4000, 16), SHM.run),
  farPastEnd: shmSession(1, shmFar(1, 12000, 8000), SHM.run),
  farGather: shmSession(1, shmFarGather(1, 8, 4000, 16), SHM.run),
  farGatherLongHead: shmSession(1, shmFarGather(1, 4097, 100, 0), SHM.run),
  farGatherNoPull: shmSession(0, shmFarGather(1, 24, 100, 0), SHM.run),
  chunks: shmSession(0, shmChunk(1, 6000, 4096), record(2, 0, 1, 0, le(5999, 3), le(1903, 2), fill(1904, 4)), SHM.run),
  chunkThenHangUp: shmSession(0, shmChunk(1, 6000, 4096), SHM.run, SHM.hangUp),
  answers: shmSession(2, SHM.own, SHM.own, SHM.run, SHM.consume, shmAck(0), shmAck(2), SHM.run),
  refusals: shmSession(3, shmPut(3, 0, fill(8, 1)), shmPut(0, 250, fill(8, 2)), SHM.run),
  regionQuery: shmSession(3, Buffer.from([1, 6, 0, 1]), le(0, 2), SHM.run, SHM.consume, record(5, 2, 2, 0, le(64, 2)), SHM.run),
  helloOffer: shmHello(1, 'node-a', 1 << 20),
  helloAccept: shmHello(2, 'node-b', 0),
  helloConfirm: shmHello(3, 'node-a', 0),
  helloOfferAuth: shmHello(1, 'node-a', 1 << 20, SHM_HELLO.auth),
  helloAcceptAuth: shmHello(2, 'node-b', 0, SHM_HELLO.canPull | SHM_HELLO.auth),
  helloConfirmAuth: shmHello(3, 'node-a', 0, SHM_HELLO.auth),
  helloAcceptRefused: shmHello(2, 'node-b', 0, SHM_HELLO.refused | SHM_HELLO.auth),
  helloConfirmRefused: shmHello(3, 'node-a', 0, SHM_HELLO.refused),
  // Authenticated sessions: the right proof (puts land), a wrong one (nothing may land, even
  // what was written into the ring before the Confirm), a mismatch either way, refusals.
  authPuts: shmSession(3 | AUTH.provider | AUTH.us | AUTH.right, nonce, shmPut(0, 0, fill(100, 1)), SHM.run),
  authEarlyPuts: shmSession(3 | AUTH.provider | AUTH.us | AUTH.right | AUTH.early, nonce, early(shmPut(0, 0, fill(64, 1))), shmPut(1, 0, fill(8, 2), 1), SHM.run),
  authWrongProof: shmSession(3 | AUTH.provider | AUTH.us, nonce, wrongProof, shmPut(0, 0, fill(100, 1)), SHM.own, SHM.run),
  authEarlyWrongProof: shmSession(3 | AUTH.provider | AUTH.us | AUTH.early, nonce, early(shmPut(0, 0, fill(64, 1)), shmFar(1, 4000, 16)), wrongProof, SHM.run),
  authProviderOnly: shmSession(3 | AUTH.provider, shmPut(0, 0, fill(16, 1)), SHM.run),
  authHarnessOnly: shmSession(3 | AUTH.us, nonce, shmPut(0, 0, fill(16, 1)), SHM.run),
  authRefuse: shmSession(3 | AUTH.provider | AUTH.us | AUTH.refuse, nonce, shmPut(0, 0, fill(16, 1)), SHM.run),
  refuseUnauthenticated: shmSession(3 | AUTH.refuse, SHM.own, SHM.run),
  // Arena shares: a far put copied out of our arena, one past its end, one before any share,
  // a second share, hostile shares, and a hole punched in the arena before a put reads it.
  arenaFar: shmSession(1, shmShare(0), shmFar(1, 4000, 16, ARENA), SHM.run),
  arenaFarGather: shmSession(1, shmShare(0), record(9, ARENA, 1, 0, le(8, 2), le(4000, 3), le(64, 2), fill(8, 7)), SHM.run),
  arenaFarPastEnd: shmSession(1, shmShare(0), shmFar(1, 4000, 64000, ARENA), SHM.run),
  arenaNeverShared: shmSession(1, shmFar(1, 4000, 16, ARENA), SHM.run),
  arenaTwice: shmSession(1, shmShare(0), shmShare(0), SHM.run),
  arenaUnsealed: shmSession(1, shmShare(1), shmFar(1, 4000, 16, ARENA), SHM.run),
  arenaOtherSize: shmSession(1, shmShare(2), SHM.run),
  arenaTwoFds: shmSession(1, shmShare(3), SHM.run),
  arenaNoFd: shmSession(1, shmShare(4), SHM.run),
  arenaGarbage: shmSession(1, shmShare(5, fill(32, 9)), SHM.run),
  arenaEventFd: shmSession(1, shmShare(6), SHM.run),
  arenaHole: shmSession(1, shmShare(0), shmShare(7, le(1, 2)), shmFar(1, 8192, 0, ARENA), SHM.run),
  arenaNoPull: shmSession(0, shmShare(0), shmFar(1, 4000, 16, ARENA), SHM.run),
  arenaBeforeConfirm: shmSession(1 | AUTH.early, early(shmShare(0)), SHM.run),
  // Write grants: a far put into the provider's arena is granted to us, and placed once we say
  // we wrote it; never written before we hang up; Written for nothing or twice; and the other
  // way, our grants of the provider's far put: in our arena, past it, before our share, for an
  // inline put, and for a put id it never sent.
  grantWritten: shmSession(3, shmFar(ARENA_BOX, 4000, 16), SHM.run, shmWritten(), SHM.run),
  grantNeverWritten: shmSession(3, shmFar(ARENA_BOX, 4000, 16), SHM.run, SHM.hangUp),
  grantWrittenTwice: shmSession(3, shmFar(ARENA_BOX, 4000, 16), SHM.run, shmWritten(), shmWritten(), SHM.run),
  writtenForNothing: shmSession(3, shmWritten(77), SHM.run),
  grantGather: shmSession(3, record(9, 0, ARENA_BOX, 0, le(8, 2), le(4000, 3), le(64, 2), fill(8, 7)), SHM.run, shmWritten(), SHM.run),
  grantThenPuts: shmSession(3, shmFar(ARENA_BOX, 4000, 16), shmPut(0, 0, fill(8, 1)), SHM.run, shmWritten(1), SHM.run),
  grantOwn: shmSession(3, shmShare(0), SHM.ownFar, SHM.run, shmGrant(4096), SHM.run, SHM.consume, shmAck(0), SHM.run),
  grantOwnPastArena: shmSession(3, shmShare(0), SHM.ownFar, SHM.run, shmGrant(63000), SHM.run),
  grantOwnNoShare: shmSession(3, SHM.ownFar, SHM.run, shmGrant(0), SHM.run),
  grantOwnInline: shmSession(3, shmShare(0), SHM.own, SHM.run, shmGrant(0), SHM.run),
  grantOwnNoPut: shmSession(3, shmShare(0), record(12 | 0x40, 0, 0, 0, le(9, 8), le(0, 2)), SHM.run),
  arenaShareBytes: Buffer.concat([Buffer.from([0x80]), arenaShareMessage(0x7f0000000000n, 16n << 30n)]),
};

function arenaShareMessage(base, bytes) {
  const b = Buffer.alloc(32);
  b.writeUInt32LE(0x48535652, 0);
  b.writeUInt16LE(SHM_VERSION, 4);
  b.writeUInt16LE(4, 6);
  b.writeBigUInt64LE(base, 16);
  b.writeBigUInt64LE(bytes, 24);
  return b;
}

// --- a ring direction's receiving side (test/fuzz/fuzz_ring.cpp; native/ring) ---
// Byte 0: slots - 1 (| 8: the credit target waits for operation 11), byte 1: frameBytes; then operations:
// 0 a frame (seq u16, n, h, n bytes after the 16-byte ring header; 4: seq u64), 1 raw bytes
// (n, then n bytes), 2 take (6: a credits operation, below), 3 release the i-th frame held
// (7: a slot as it is; 11: set the credit target).
const RING_MAGIC = 0x5246;
function ringFrame(seq, body, headerLen = 0, wide = false) {
  return Buffer.concat([Buffer.from([wide ? 4 : 0]), le(seq, wide ? 8 : 2), Buffer.from([body.length, headerLen]), body]);
}
const ringRaw = (bytes) => Buffer.concat([Buffer.from([1, bytes.length]), bytes]);
const TAKE = Buffer.from([2]);
const releaseHeld = (i = 0) => Buffer.from([3, i]);
const releaseSlot = (slot) => Buffer.from([7, slot]);
const TARGET = Buffer.from([11]);
const ringSession = (slots, frameBytes, ...ops) => Buffer.concat([Buffer.from([slots - 1, frameBytes]), ...ops]);
const times = (n, f) => Array.from({ length: n }, (_, i) => f(i));
// A raw frame whose ring header is whole but for its magic.
const badMagic = Buffer.alloc(24, 0x33);
badMagic.writeUInt16LE(RING_MAGIC ^ 0x0101, 0);
badMagic[2] = 1;
badMagic[3] = 0;
badMagic.writeUInt32LE(0, 4);
badMagic.writeBigUInt64LE(0n, 8);
// Credits operations: 6 | c << 3 | x << 5 | y << 6, y naming a node (A: node-a, B, C, NONE: "").
// c 0 a record built by encodeCredit (dir x, frameBytes u32, total, base), 1 raw bytes (x: 24 of
// them, else n & 63 then n), 2 expect(dir x, node y, base), 3 waiting word of dir x set to 1
// (y 2: dir x's sender numbers a frame of 4 * b bytes, or 0x80 and 4 bytes; y 3: the credits
// mailbox closes). A base or total is one byte when small, else 0x80 and 8.
const [A, B, C, NONE] = [0, 1, 2, 3];
const creditsOp = (c, x, y) => Buffer.from([6 | (c << 3) | (x << 5) | (y << 6)]);
const smallOrWide = (v, small) => (BigInt(v) <= BigInt(small) ? Buffer.from([Number(v)]) : Buffer.concat([Buffer.from([0x80]), le(v, 8)]));
const credit = (dir, sender, total, base, frameBytes = 64) =>
  Buffer.concat([creditsOp(0, dir, sender), le(frameBytes, 4), smallOrWide(total, 0x7f), smallOrWide(base, 3)]);
const rawCredit = (sender, bytes) =>
  bytes.length === 24 ? Buffer.concat([creditsOp(1, 1, sender), bytes]) : Buffer.concat([creditsOp(1, 0, sender), Buffer.from([bytes.length]), bytes]);
const expect = (dir, node, base) => Buffer.concat([creditsOp(2, dir, node), smallOrWide(base, 3)]);
const waitFor = (dir) => creditsOp(3, dir, 0);
const CLOSE_CREDITS = creditsOp(3, 0, 3);
const send = (dir, bytes) =>
  Buffer.concat([creditsOp(3, dir, 2), bytes % 4 === 0 && bytes < 512 ? Buffer.from([bytes / 4]) : Buffer.concat([Buffer.from([0x80]), le(bytes, 4)])]);
// A credit record's 24 bytes (native/ring/ring_credit.h), for raw puts.
function creditRecord({ magic = 0x4352, version = 1, dir = 0, frameBytes = 64, total = 1n, base = 1n } = {}) {
  const b = Buffer.alloc(24);
  b.writeUInt16LE(magic, 0);
  b[2] = version;
  b[3] = dir;
  b.writeUInt32LE(frameBytes, 4);
  b.writeBigUInt64LE(BigInt(total), 8);
  b.writeBigUInt64LE(BigInt(base), 16);
  return b;
}
const WIDE_BASE = 0x7f0000001000n;
const ring = {
  inOrder: ringSession(4, 64, ...times(4, (i) => ringFrame(i, fill(32, i))), ...times(4, () => TAKE), ...times(4, () => releaseHeld()),
    ...times(4, (i) => ringFrame(4 + i, fill(40, i), 8)), ...times(4, () => TAKE), ...times(4, () => releaseHeld())),
  outOfOrder: ringSession(4, 64, ringFrame(2, fill(16, 2)), ringFrame(0, fill(16, 0)), TAKE, ringFrame(3, fill(16, 3)), TAKE,
    ringFrame(1, fill(16, 1)), TAKE, TAKE, TAKE, releaseHeld(2), releaseHeld(0), ringFrame(5, fill(8, 5)), ringFrame(4, fill(8, 4)), TAKE, TAKE),
  // One slot, lap after lap: a take and a release between frames.
  oneSlot: ringSession(1, 32, ...times(12, (i) => Buffer.concat([ringFrame(i, fill(i, i), i % 3), TAKE, releaseHeld()]))),
  // Eight slots, credits back in batches of four as frames are released one by one.
  batches: ringSession(8, 200, ...times(8, (i) => ringFrame(i, fill(100 + i, i), 20)), ...times(8, () => TAKE),
    ...times(8, () => releaseHeld()), ...times(8, (i) => ringFrame(8 + i, fill(180, i), 0)), ...times(8, () => TAKE)),
  // Frames before the sender was targeted (a hostile one), released before and after.
  targetLate: ringSession(2 | 8, 16, ringFrame(0, fill(4, 0)), ringFrame(1, fill(4, 1)), TAKE, TAKE, releaseHeld(), TARGET,
    ringFrame(2, fill(4, 2)), TAKE, releaseHeld(), TAKE),
  duplicate: ringSession(4, 64, ringFrame(0, fill(8, 0)), ringFrame(1, fill(8, 1)), ringFrame(1, fill(8, 1)), TAKE, TAKE, releaseHeld(), TAKE),
  // A second frame 0 after it was released: below the window.
  belowWindow: ringSession(2, 64, ringFrame(0, fill(8, 0)), TAKE, releaseHeld(), ringFrame(0, fill(8, 0)), TAKE),
  aboveWindow: ringSession(2, 64, ringFrame(0, fill(8, 0)), ringFrame(5, fill(8, 5)), TAKE, releaseHeld(), ringFrame(1, fill(8, 1))),
  seqOutOfRange: ringSession(2, 64, ringFrame(2n ** 53n, fill(8, 0), 0, true), TAKE),
  headerTooLong: ringSession(2, 64, ringFrame(0, fill(8, 0), 9), TAKE),
  badMagic: ringSession(2, 64, ringRaw(badMagic), TAKE),
  shortFrame: ringSession(2, 64, ringRaw(fill(10, 1)), TAKE),
  // Released twice, never taken, out of range: none of them a release.
  doubleRelease: ringSession(2, 64, ringFrame(0, fill(8, 0)), TAKE, releaseHeld(), releaseSlot(0), releaseSlot(1), releaseSlot(3),
    ringFrame(1, fill(8, 1)), ringFrame(2, fill(8, 2)), TAKE, TAKE),
  // Larger than a buffer, then no buffer left.
  tooLarge: ringSession(2, 16, Buffer.concat([Buffer.from([8]), le(0, 2), Buffer.from([200, 0]), fill(456, 7)]),
    ringFrame(0, fill(16, 0)), ringFrame(1, fill(16, 1)), ringFrame(2, fill(16, 2)), TAKE),
  // Credits from the expected neighbours: larger totals count, a send waiting hears of one.
  creditsInOrder: ringSession(4, 64, expect(0, A, 1), expect(1, B, 2), credit(0, A, 4, 1), credit(1, B, 4, 2), waitFor(0),
    credit(0, A, 6, 1, 128), credit(0, A, 5, 1), waitFor(1), credit(1, B, 4, 2), credit(1, B, 8, 2, 256), credit(0, A, 7, 1)),
  // Records before expect(): the largest per (sender, base) is kept and counts once expected.
  creditsEarly: ringSession(4, 64, credit(0, A, 4, 1), credit(0, A, 6, 1, 96), credit(0, A, 5, 1), credit(0, A, 6, 1, 32),
    credit(0, B, 9, 1), credit(0, A, 7, 2), credit(1, C, 3, 0), waitFor(0), expect(0, A, 1), credit(0, A, 8, 1),
    credit(1, C, 5, 0), waitFor(1), expect(1, C, 0), credit(1, C, 6, 0)),
  // More than 8 instances before expect(): the ninth is dropped, even the one expected.
  creditsEarlyFull: ringSession(4, 64, ...[A, B].flatMap((s) => times(4, (b) => credit(0, s, 2 + b, b))), credit(0, C, 9, 0),
    credit(0, A, 20, 3), credit(0, C, 10, 0), expect(0, C, 0), credit(0, C, 3, 0), credit(0, A, 30, 3)),
  // After expect(): another node, another base, no node at all, another direction's node.
  creditsWrongSource: ringSession(2, 64, expect(0, A, 1), credit(0, B, 5, 1), credit(0, A, 5, 2), credit(0, NONE, 5, 1),
    credit(0, A, 5, WIDE_BASE), credit(0, A, 3, 1), credit(1, A, 5, 1), expect(1, A, WIDE_BASE), credit(1, A, 6, WIDE_BASE)),
  // Malformed records and puts of every length, then the largest totals there are.
  creditsMalformed: ringSession(2, 64, expect(0, A, 1), expect(1, A, 1),
    rawCredit(A, creditRecord({ magic: 0x5246 })), rawCredit(A, creditRecord({ version: 2 })), rawCredit(A, creditRecord({ dir: 2 })),
    rawCredit(A, creditRecord({ total: 2n ** 53n + 1n })), credit(0, A, 2n ** 53n + 1n, 1), credit(0, A, 2n ** 64n - 1n, 1),
    rawCredit(A, creditRecord({ total: 3n }).subarray(0, 23)), rawCredit(A, Buffer.concat([creditRecord({ total: 3n }), fill(1, 0)])),
    rawCredit(A, Buffer.alloc(0)), rawCredit(A, fill(32, 0x43)), rawCredit(A, fill(33, 0x43)), rawCredit(A, fill(63, 0x52)),
    rawCredit(A, creditRecord({ total: 2n ** 53n, frameBytes: 0xffffffff })), rawCredit(A, creditRecord({ dir: 1, total: 2n ** 32n + 1n }))),
  // More records than buffers: the mailbox recycles them and never runs out.
  creditsBurst: ringSession(2, 64, expect(0, B, 0), expect(1, C, 3), ...times(40, (i) => Buffer.concat([
    credit(i % 2, i % 2 ? C : B, 1 + (i >> 1), i % 2 ? 3 : 0), i % 5 === 0 ? waitFor(i % 2) : Buffer.alloc(0)]))),
  // The credits mailbox closes: puts find no mailbox; what came before still counts.
  creditsClosed: ringSession(2, 64, credit(0, A, 4, 1), credit(1, B, 2, 0), expect(1, B, 0), CLOSE_CREDITS, credit(0, A, 9, 1),
    waitFor(0), expect(0, A, 1), rawCredit(A, creditRecord({ total: 12n })), waitFor(1)),
  // Senders: no number before a credit, one per credit after, none for a frame too large.
  creditsSend: ringSession(4, 64, send(0, 8), expect(0, A, 1), credit(0, A, 2, 1), send(0, 8), send(0, 64), send(0, 8), send(0, 68),
    credit(0, A, 4, 1, 256), send(0, 68), send(0, 256), send(0, 257), send(0, 0), credit(1, B, 3, 2), expect(1, B, 2), send(1, 1000),
    send(1, 1), send(1, 2), send(1, 3), send(1, 0), CLOSE_CREDITS, send(1, 4)),
  // A direction's frames and the credits of both, interleaved.
  creditsWithFrames: ringSession(4, 64, credit(0, A, 4, 1), ringFrame(0, fill(32, 0)), ringFrame(1, fill(32, 1)), expect(0, A, 1), TAKE,
    waitFor(0), credit(0, A, 5, 1), TAKE, releaseHeld(), ringFrame(2, fill(8, 2)), expect(1, B, 2), credit(1, B, 6, 2), TAKE,
    releaseHeld(), releaseHeld(), waitFor(1), credit(1, B, 7, 2), TAKE, releaseHeld()),
};

const sets = { fuzz_frames: frames, fuzz_tcp_stream: streams, fuzz_verbs_messages: verbs, fuzz_shm: shm, fuzz_ring: ring };
for (const [harness, seeds] of Object.entries(sets)) {
  const dir = path.join(root, harness);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(seeds)) fs.writeFileSync(path.join(dir, name), bytes);
  console.log(`${harness}: ${Object.keys(seeds).length} seeds`);
}
