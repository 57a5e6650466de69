// Control messages as msgpack records: each kind survives encode/decode (64-bit vaddrs
// included), and whatever a peer could send that is not a well-formed message is refused
// as ERR_RVMA_PROTOCOL before the manager acts on it.
import { CONTROL_VADDR, type ControlMessage, Kind, decode, encode } from '../../src/rendezvous/messages';
import { packValue } from '../../src/tensor/codec';
import { expectThrows } from '../helpers/errors';

const PROTOCOL = 'ERR_RVMA_PROTOCOL';
const from = { from: 'node-a', fromIncarnation: '00000000deadbeef' };
const meta = { dtype: 'int64' as const, shape: [2, 3], isDead: false, byteSize: 48 };
const U64_MAX = (1n << 64n) - 1n;
// Kind is a const enum: no runtime object to look names up in.
const KIND_NAMES: Record<number, string> = {
  1: 'TENSOR_REQUEST',
  2: 'META_DATA_RESPONSE',
  3: 'TENSOR_RE_REQUEST',
  4: 'ERROR_STATUS',
  5: 'TENSOR_CANCEL',
  6: 'PUSH_ACCEPTED',
  7: 'NOT_PUSHED',
  8: 'PUSH_ENDED',
};

describe('round trips', () => {
  const messages: ControlMessage[] = [
    { kind: Kind.TensorRequest, ...from, key: 'k', stepId: '18446744073709551615', requestIndex: 1, dataVaddr: 0n, cachedMeta: null, pushVaddr: 0n },
    { kind: Kind.TensorRequest, ...from, key: 'k', stepId: '5', requestIndex: 2 ** 40, dataVaddr: U64_MAX, cachedMeta: meta, pushVaddr: U64_MAX },
    { kind: Kind.MetaDataResponse, ...from, requestIndex: 3, meta, checksum: 0xffffffff },
    { kind: Kind.MetaDataResponse, ...from, requestIndex: 4, meta: { ...meta, isDead: true, byteSize: 0 }, checksum: null },
    { kind: Kind.TensorReRequest, ...from, requestIndex: 5, dataVaddr: (1n << 63n) + 7n },
    { kind: Kind.ErrorStatus, ...from, requestIndex: 6, code: 'ERR_RVMA_ABORTED', message: 'step 1 was cleaned up' },
    { kind: Kind.PushAccepted, ...from, key: 'k', pushVaddr: (1n << 63n) + 9n },
    { kind: Kind.NotPushed, ...from, key: 'k', stepId: '7', dropped: true },
    { kind: Kind.PushEnded, ...from },
  ];
  test.each(messages.map((m, i) => [`${KIND_NAMES[m.kind]} #${i}`, m] as const))('%s', (_, message) => {
    expect(decode(encode(message))).toEqual(message);
  });

  test('the control mailbox sits in the library-reserved range', () => {
    expect(CONTROL_VADDR > 0n && CONTROL_VADDR <= 0xffffn).toBe(true);
  });
});

describe('refusals', () => {
  const request = { kind: Kind.TensorRequest, ...from, key: 'k', stepId: '1', requestIndex: 1, dataVaddr: '0', cachedMeta: null };
  test.each<[string, Uint8Array, RegExp]>([
    ['truncated msgpack (a map of 5 entries, none present)', Uint8Array.from([0x85]), /undecodable/],
    ['the reserved msgpack byte 0xc1', Uint8Array.from([0xc1]), /./],
    ['an empty message', new Uint8Array(0), /undecodable|not a record/],
    ['a bare number', packValue(7), /not a record/],
    ['null', packValue(null), /not a record/],
    ['an unknown kind', packValue({ ...request, kind: 99 }), /unknown control message kind 99/],
    ['a missing sender', packValue({ ...request, from: undefined }), /field from/],
    ['a numeric incarnation', packValue({ ...request, fromIncarnation: 5 }), /field fromIncarnation/],
    ['a missing key', packValue({ ...request, key: undefined }), /field key/],
    ['a numeric stepId', packValue({ ...request, stepId: 1 }), /field stepId/],
    ['a negative requestIndex', packValue({ ...request, requestIndex: -1 }), /requestIndex/],
    ['a fractional requestIndex', packValue({ ...request, requestIndex: 1.5 }), /requestIndex/],
    ['a numeric dataVaddr', packValue({ ...request, dataVaddr: 5 }), /field dataVaddr/],
    ['a dataVaddr that is not decimal', packValue({ ...request, dataVaddr: '0x10' }), /dataVaddr is invalid/],
    ['a dataVaddr of 2^64', packValue({ ...request, dataVaddr: (1n << 64n).toString() }), /dataVaddr is invalid/],
    ['a malformed cachedMeta', packValue({ ...request, cachedMeta: { dtype: 'float32' } }), /malformed tensor meta/],
    [
      'a meta response with a bad checksum',
      packValue({ kind: Kind.MetaDataResponse, ...from, requestIndex: 1, meta, checksum: 'abc' }),
      /checksum/,
    ],
    ['a meta response without meta', packValue({ kind: Kind.MetaDataResponse, ...from, requestIndex: 1 }), /malformed tensor meta/],
    ['an error status without code', packValue({ kind: Kind.ErrorStatus, ...from, requestIndex: 1, message: 'x' }), /field code/],
    ['a pushVaddr that is not decimal', packValue({ ...request, pushVaddr: '-1' }), /pushVaddr is invalid/],
    ['a push acceptance of vaddr 0', packValue({ kind: Kind.PushAccepted, ...from, key: 'k', pushVaddr: '0' }), /pushVaddr is invalid/],
    ['a push acceptance without key', packValue({ kind: Kind.PushAccepted, ...from, pushVaddr: '5' }), /field key/],
    ['a not-pushed without dropped', packValue({ kind: Kind.NotPushed, ...from, key: 'k', stepId: '1' }), /field dropped/],
    ['a not-pushed with a bad stepId', packValue({ kind: Kind.NotPushed, ...from, key: 'k', stepId: '1e3', dropped: false }), /stepId is invalid/],
  ])('%s', (_, bytes, message) => {
    expectThrows(() => decode(bytes), PROTOCOL, message);
  });
});
