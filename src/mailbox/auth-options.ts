// Endpoint.create's `auth` option: the shared secret every peer must prove it knows, given
// inline or as a key file. Checked here once; the secret then lives in native memory.
import * as fs from 'node:fs';
import { checkOptions, checkString, invalid } from '../base/validate';

/** Peer authentication (see docs/security.md). Give exactly one of `secret` and `secretFile`. */
export interface AuthOptions {
  /** The shared secret: 16 to 1024 bytes (a string is taken as its UTF-8 bytes). */
  secret?: string | Uint8Array;
  /**
   * A file holding the secret (one trailing newline is ignored). Refused when group or others
   * may read it, as ssh refuses such a private key.
   */
  secretFile?: string;
}

export const MIN_SECRET_BYTES = 16; // native/auth/peer_auth.h
export const MAX_SECRET_BYTES = 1024;

/** The secret's bytes, or undefined when `auth` is absent. */
export function parseAuthOptions(call: string, auth: unknown): Buffer | undefined {
  if (auth === undefined) return undefined;
  const o = checkOptions<AuthOptions>(`${call} auth`, auth, ['secret', 'secretFile']);
  if ((o.secret === undefined) === (o.secretFile === undefined)) {
    throw invalid(call, 'auth takes exactly one of secret and secretFile');
  }
  const secret = o.secret !== undefined ? inlineSecret(call, o.secret) : fileSecret(call, checkString(call, 'auth.secretFile', o.secretFile));
  if (secret.length < MIN_SECRET_BYTES || secret.length > MAX_SECRET_BYTES) {
    throw invalid(call, `the auth secret must be ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes, got ${secret.length}`);
  }
  return secret;
}

function inlineSecret(call: string, secret: unknown): Buffer {
  if (typeof secret === 'string') return Buffer.from(secret, 'utf8');
  if (secret instanceof Uint8Array) return Buffer.from(secret); // a copy: the caller may reuse its own
  throw invalid(call, 'auth.secret must be a string or a Uint8Array');
}

function fileSecret(call: string, file: string): Buffer {
  let stat: fs.Stats;
  let bytes: Buffer;
  try {
    stat = fs.statSync(file);
    bytes = fs.readFileSync(file);
  } catch (error) {
    throw invalid(call, `cannot read auth.secretFile "${file}": ${(error as Error).message}`);
  }
  if ((stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8);
    throw invalid(call, `auth.secretFile "${file}" may be read by others (mode ${mode}); chmod 600 it`);
  }
  const text = bytes.toString('latin1');
  const newline = text.endsWith('\r\n') ? 2 : text.endsWith('\n') ? 1 : 0;
  return bytes.subarray(0, bytes.length - newline);
}
