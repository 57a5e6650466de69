// Native failures reach JavaScript as statuses, and a constructor's thrown one as the RvmaError
// of its status (nativeFailure); out of memory is a code of its own.
import { RvmaError, codeOfStatus, nativeFailure, statusError } from '../../src/base/errors';

test('every status the native core defines has its own code; out of memory is ERR_RVMA_OUT_OF_MEMORY', () => {
  const codes = Array.from({ length: 16 }, (_, i) => codeOfStatus(i + 1));
  expect(new Set(codes).size).toBe(16);
  expect(codeOfStatus(16)).toBe('ERR_RVMA_OUT_OF_MEMORY');
  const e = statusError(16, { op: 'Mailbox.post', vaddr: 0x20n });
  expect(e).toBeInstanceOf(RvmaError);
  expect(e.code).toBe('ERR_RVMA_OUT_OF_MEMORY');
  expect(e.message).toBe('Mailbox.post: out of memory');
});

test('a thrown native failure becomes the RvmaError of its status, with the native message; anything else passes as it is', () => {
  const thrown = Object.assign(new Error('out of memory creating the endpoint'), { rvmaStatus: 16 });
  const e = nativeFailure(thrown, 'Endpoint.create') as RvmaError;
  expect(e).toBeInstanceOf(RvmaError);
  expect([e.code, e.message]).toEqual(['ERR_RVMA_OUT_OF_MEMORY', 'Endpoint.create: out of memory creating the endpoint']);
  const inUse = nativeFailure(Object.assign(new Error('cannot listen'), { rvmaStatus: 15 }), 'Endpoint.create') as RvmaError;
  expect(inUse.code).toBe('ERR_RVMA_ADDRESS_IN_USE');
  const typeError = new TypeError('put(putId, route, vaddr, data, offset, append)');
  expect(nativeFailure(typeError, 'Endpoint.put')).toBe(typeError);
  expect(nativeFailure(undefined, 'Endpoint.put')).toBe(undefined);
});
