// Argument checks for the public API. Each failure names the call, the argument and what
// was expected, as ERR_RVMA_INVALID_ARGUMENT.
import { RvmaError } from './errors';

export const U64_MAX = (1n << 64n) - 1n;

/**
 * A u64 argument (vaddr, key, offset, threshold, step id): a bigint, or a non-negative safe
 * integer for the values most programs use. The library hands u64 values back as bigint.
 */
export type U64 = number | bigint;

export function invalid(call: string, what: string): RvmaError {
  return new RvmaError('ERR_RVMA_INVALID_ARGUMENT', `${call}: ${what}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return value.constructor?.name ?? 'object';
  return String(value);
}

/** The options object itself: undefined or a plain object with only known keys. */
export function checkOptions<T extends object>(call: string, options: unknown, keys: readonly (keyof T & string)[]): T {
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(call, `options must be an object, got ${describe(options)}`);
  }
  // for-in walks the object's cached key list; Object.keys would allocate an array per call.
  for (const key in options) {
    if (Object.prototype.hasOwnProperty.call(options, key) && !isOneOf(key, keys)) {
      throw invalid(call, `unknown option "${key}" (expected ${keys.join(', ')})`);
    }
  }
  return options as T;
}

// A loop the compiler inlines: includes() is a builtin call, paid per option of every put.
function isOneOf(key: string, keys: readonly string[]): boolean {
  for (let i = 0; i < keys.length; i++) if (keys[i] === key) return true;
  return false;
}

/** A u64 given as bigint or non-negative safe integer, within [min, max]. */
export function checkU64(call: string, name: string, value: unknown, min = 0n, max = U64_MAX): bigint {
  let v: bigint;
  if (typeof value === 'bigint') v = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) v = BigInt(value);
  else throw invalid(call, `${name} must be a bigint or a safe integer, got ${describe(value)}`);
  if (v < min || v > max) throw invalid(call, `${name} must be in [${min}, ${max}], got ${v}`);
  return v;
}

export function checkInteger(call: string, name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(call, `${name} must be an integer in [${min}, ${max}], got ${describe(value)}`);
  }
  return value;
}

export function checkOneOf<T extends string>(call: string, name: string, value: unknown, allowed: readonly T[]): T {
  if (!(allowed as readonly unknown[]).includes(value)) {
    throw invalid(call, `${name} must be one of ${allowed.map((a) => `"${a}"`).join(', ')}, got ${describe(value)}`);
  }
  return value as T;
}

export function checkString(call: string, name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalid(call, `${name} must be a non-empty string, got ${describe(value)}`);
  }
  return value;
}

/** A non-empty list of node ids, or undefined (everyone). */
export function parseAllow(call: string, allow: unknown): string[] | undefined {
  if (allow === undefined) return undefined;
  if (!Array.isArray(allow) || allow.length === 0) throw invalid(call, 'allow must be a non-empty array of node ids');
  return allow.map((id, i) => checkString(call, `allow[${i}]`, id));
}

export function checkBoolean(call: string, name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalid(call, `${name} must be a boolean, got ${describe(value)}`);
  return value;
}

/** Bytes to send or to post: any ArrayBufferView or ArrayBuffer, viewed without a copy. */
export function checkBytes(call: string, name: string, value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw invalid(call, `${name} must be a Buffer, TypedArray, DataView or ArrayBuffer, got ${describe(value)}`);
}
