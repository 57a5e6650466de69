// How a command ends: a failure prints the library's typed message and exits non-zero.
import { RvmaError } from '../base/errors';

/** The exit status of a command that failed (commander's own usage errors exit 1 too). */
export const FAILED = 1;

export function describeError(error: unknown): string {
  if (error instanceof RvmaError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** Wraps a command's action: errors go to stderr as `rvma <command>: <message>`, exit status 1. */
export function action<A extends unknown[]>(name: string, run: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await run(...args);
    } catch (error) {
      process.stderr.write(`rvma ${name}: ${describeError(error)}\n`);
      process.exitCode = FAILED;
    }
  };
}
