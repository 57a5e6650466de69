// The property-test harness of the decoder fuzz suites (fast-check): one property per call over
// `runs` inputs, with a CPU bound per input, and a failure that names the seed and the input
// that replay it. RVMA_FUZZ_SEED=<n> replays a reported failure (or explores another seed).
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { RvmaError, type RvmaErrorCode } from '../../src/base/errors';

/**
 * A decoder that spends this long on one small input is a denial of service, not a decoder (one
 * that allocates or loops by a declared count of 2^32 takes seconds). Far above a real decode, so
 * that a collection or a busy machine cannot reach it.
 */
const SLOW_MS = 250;
/** A slow input is measured again this many times, and fails only if every one is slow. */
const SLOW_RETRIES = 3;

/** Process CPU time of one check, in ms: it also counts V8's helper threads, hence the minimum below. */
function cpuMs(run: () => void): number {
  const cpu = process.cpuUsage();
  run();
  const { user, system } = process.cpuUsage(cpu);
  return (user + system) / 1000;
}

function seedFromEnv(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const seed = Number(value);
  if (!Number.isSafeInteger(seed)) throw new Error(`RVMA_FUZZ_SEED must be an integer, got "${value}"`);
  return seed | 0; // fast-check seeds are 32-bit
}

export type Fuzz = <T>(name: string, runs: number, input: fc.Arbitrary<T>, check: (value: T) => void, show: (value: T) => string) => void;

/** The fuzz() of one suite: `file` (as given to jest) and the default seed say how to replay. */
export function fuzzer(file: string, defaultSeed: number): { fuzz: Fuzz; seed: number } {
  const seed = seedFromEnv(process.env.RVMA_FUZZ_SEED, defaultSeed);
  const fuzz: Fuzz = (name, runs, input, check, show) => {
    test(`${name} (${runs} cases)`, () => {
      // Refusals are the common outcome: capturing their stacks (jest asks for 100 frames) would
      // take much of the run. A counterexample is run again below, with its stack.
      const depth = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      let details;
      try {
        details = fc.check(
          fc.property(input, (value) => {
            const start = performance.now();
            check(value);
            if (performance.now() - start <= SLOW_MS) return;
            // Wall time also counts a collection or a busy machine: the same input again, in CPU
            // time, the least of a few runs (a slow decoder is slow every time).
            let least = Infinity;
            for (let i = 0; i < SLOW_RETRIES && least > SLOW_MS; i++) least = Math.min(least, cpuMs(() => check(value)));
            if (least > SLOW_MS) throw new Error(`one input took at least ${least.toFixed(0)} ms of CPU in each of ${SLOW_RETRIES} runs`);
          }),
          { numRuns: runs, seed },
        );
      } finally {
        Error.stackTraceLimit = depth;
      }
      if (!details.failed) return;
      const found = details.counterexample?.[0];
      let failure: unknown = details.errorInstance;
      try {
        if (found !== undefined) check(found);
      } catch (error) {
        failure = error;
      }
      throw new Error(
        `replay with RVMA_FUZZ_SEED=${seed} npx jest ${file} -t '${name}'\n` +
          `input: ${found === undefined ? '(none)' : show(found)}\n` +
          `failure: ${(failure as Error)?.stack ?? String(failure)}\n${fc.defaultReportMessage(details) ?? ''}`,
      );
    });
  };
  return { fuzz, seed };
}

export const hex = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
export const fromHex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'hex'));

export function printable(value: unknown): string {
  try {
    return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

export function fail(what: string, value?: unknown): never {
  throw new Error(`${what}${value === undefined ? '' : `: ${printable(value)}`}`);
}

/** A refusal is exactly an RvmaError with the decoder's code: no TypeError, no other code. */
export function assertRefusal(error: unknown, code: RvmaErrorCode): void {
  if (!(error instanceof RvmaError)) {
    throw new Error(`threw a ${(error as Error)?.constructor?.name} instead of RvmaError: ${(error as Error)?.stack ?? String(error)}`);
  }
  if (error.code !== code) fail(`threw ${error.code} instead of ${code}`, error.message);
}

/** Received bytes are a view into a larger buffer: a decoder must not read past its view. */
export function inView(bytes: Uint8Array, fill = 0xc1): Uint8Array {
  const buffer = new Uint8Array(bytes.length + 16).fill(fill);
  buffer.set(bytes, 8);
  return buffer.subarray(8, 8 + bytes.length);
}

// msgpack type markers: a byte turned into one of these changes the parse the most.
const MSGPACK_MARKERS = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc6, 0xc7, 0xc9,
  0xca, 0xcb, 0xcf, 0xd3, 0xd4, 0xd5, 0xd8, 0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff];

export type ByteEdit = [op: number, at: number, value: number];
export const byteEdits = fc.array(fc.tuple(fc.nat(7), fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 });

function splice(b: Uint8Array, at: number, remove: number, insert: number[]): Uint8Array {
  const tail = b.subarray(Math.min(b.length, at + remove));
  const out = new Uint8Array(at + insert.length + tail.length);
  out.set(b.subarray(0, at));
  out.set(insert, at);
  out.set(tail, at + insert.length);
  return out;
}

/** Valid bytes with a few edits a broken or hostile peer might make, as a view (see inView). */
export function mutateBytes(input: Uint8Array, edits: ByteEdit[]): Uint8Array {
  let b: Uint8Array = input.slice();
  for (const [op, at, value] of edits) {
    const i = b.length ? at % b.length : 0;
    switch (op) {
      case 0: // bit flip
        if (b.length) b[i] ^= 1 << (value & 7);
        break;
      case 1: // truncation
        b = b.subarray(0, at % (b.length + 1));
        break;
      case 2: // extension
        b = splice(b, b.length, 0, Array.from({ length: 1 + (at % 8) }, (_, k) => (value + 97 * k) & 0xff));
        break;
      case 3: // a byte replaced
        if (b.length) b[i] = value;
        break;
      case 4: // a byte inserted
        b = splice(b, i, 0, [value]);
        break;
      case 5: // bytes deleted
        b = splice(b, i, 1 + (value % 8), []);
        break;
      case 6: // a msgpack marker where there was something else
        if (b.length) b[i] = MSGPACK_MARKERS[value % MSGPACK_MARKERS.length];
        break;
      case 7: // a huge length or number
        b = splice(b, i, 4, [0xff, 0xff, 0xff, value]);
        break;
    }
  }
  return inView(b);
}

/**
 * Bytes that look like msgpack to a decoder: random ones; an array or map header declaring up to
 * 2^32 items (counts near powers of two) and a few bytes; or one of `firstBytes` (container and
 * extension headers of the records decoded) then random bytes, so the parse goes deeper.
 */
export function msgpackLike(firstBytes: number[]): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.tuple(fc.constantFrom(0xdc, 0xdd, 0xde, 0xdf), fc.nat(32), fc.nat(2), fc.uint8Array({ maxLength: 8 })).map(([marker, log, less, rest]) => {
      const count = Math.max(0, 2 ** log - less);
      const width = marker === 0xdc || marker === 0xde ? 2 : 4;
      const header = Buffer.alloc(1 + width);
      header[0] = marker;
      header.writeUIntBE(count % 2 ** (8 * width), 1, width);
      return Uint8Array.from([...header, ...rest]);
    }),
    fc.tuple(fc.constantFrom(...firstBytes), fc.uint8Array({ maxLength: 96 })).map(([first, rest]) => Uint8Array.from([first, ...rest])),
  );
}
