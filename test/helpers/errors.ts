// Assertions on typed errors: the code is the contract, the message must name what failed.
import { RvmaError, type RvmaErrorCode } from '../../src';

function check(error: unknown, code: RvmaErrorCode, message?: RegExp): RvmaError {
  expect(error).toBeInstanceOf(RvmaError);
  const e = error as RvmaError;
  expect(e.code).toBe(code);
  expect(e.name).toBe('RvmaError');
  if (message) expect(e.message).toMatch(message);
  return e;
}

/** The promise rejects with RvmaError `code` (and a message matching `message`). */
export async function expectRejects(promise: Promise<unknown>, code: RvmaErrorCode, message?: RegExp): Promise<RvmaError> {
  let outcome: { error: unknown } | undefined;
  try {
    await promise;
  } catch (error) {
    outcome = { error };
  }
  if (!outcome) throw new Error(`expected a rejection with ${code}, but the promise resolved`);
  return check(outcome.error, code, message);
}

/** The synchronous call throws RvmaError `code` (and a message matching `message`). */
export function expectThrows(call: () => unknown, code: RvmaErrorCode, message?: RegExp): RvmaError {
  let outcome: { error: unknown } | undefined;
  try {
    call();
  } catch (error) {
    outcome = { error };
  }
  if (!outcome) throw new Error(`expected a throw with ${code}, but the call returned`);
  return check(outcome.error, code, message);
}

/**
 * A promise-returning call reports `code` as a rejection, never by throwing synchronously
 * (callers chain .catch() or use the promise without a try block).
 */
export async function expectFails(call: () => Promise<unknown>, code: RvmaErrorCode, message?: RegExp): Promise<RvmaError> {
  let promise: Promise<unknown> | undefined;
  let thrown: { error: unknown } | undefined;
  try {
    promise = call();
  } catch (error) {
    thrown = { error };
  }
  if (thrown) throw new Error(`expected a rejection with ${code}, but the call threw synchronously: ${String(thrown.error)}`);
  return expectRejects(promise!, code, message);
}

/** Whether the promise has settled by the time the event loop turned once. */
export async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  return settled;
}
