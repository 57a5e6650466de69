// docs/protocol.md is the contract an outside implementer builds a peer from, so this test
// builds one from it: the tcp hello and frames are laid out from the document's tables (field,
// offset, size, constant values), read at run time, and spoken over a raw socket to a real
// endpoint. If the document drifts from the code, the endpoint refuses the peer and this fails.
// The shm handshake cannot be spoken from here (it passes fds over a SOCK_SEQPACKET socket),
// so its table is checked against the constants and encoder in native/providers/shm instead.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { type ProtocolErrorInfo } from '../../src';
import { type ParsedFrame } from '../../support/tcp-wire';
import { PROGRESS_MODES, VADDR, trackEndpoints, uniqueNodeId } from '../helpers/endpoints';

const ROOT = path.join(__dirname, '..', '..');
const WAIT_MS = 10_000;

// ---- Reading the document ----------------------------------------------------------------

/** The text under `heading` (a "## " heading) inside the part that starts with `part` (a "# " heading). */
function section(doc: string, part: string | undefined, heading: string): string {
  let text = doc;
  if (part !== undefined) {
    const parts = doc.split(/^# /m);
    const found = parts.find((p) => p.startsWith(part));
    if (!found) throw new Error(`docs/protocol.md has no part "# ${part}"`);
    text = found;
  }
  const sections = text.split(/^## /m);
  const found = sections.find((s) => s.startsWith(`${heading}\n`));
  if (!found) throw new Error(`docs/protocol.md has no section "## ${heading}"${part ? ` in "# ${part}"` : ''}`);
  return found;
}

type Row = Record<string, string>;

/** Cells of a markdown table row; a `|` inside backticks stays in its cell. */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let code = false;
  for (const ch of line.trim().replace(/^\|/, '').replace(/\|$/, '')) {
    if (ch === '`') code = !code;
    if (ch === '|' && !code) {
      out.push(cell.trim());
      cell = '';
    } else {
      cell += ch;
    }
  }
  out.push(cell.trim());
  return out;
}

/** The rows of the first table in `text` whose header is exactly `columns`. */
function table(text: string, columns: string[]): Row[] {
  const lines = text.split('\n').map((l) => l.trim());
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i].startsWith('|') || !/^\|[\s|:-]+\|$/.test(lines[i + 1])) continue;
    const header = cells(lines[i]);
    if (header.join('|') !== columns.join('|')) continue;
    const rows: Row[] = [];
    for (let j = i + 2; j < lines.length && lines[j].startsWith('|'); j++) {
      const c = cells(lines[j]);
      rows.push(Object.fromEntries(columns.map((name, k) => [name, c[k] ?? ''])));
    }
    return rows;
  }
  throw new Error(`no table with columns ${columns.join(' | ')}`);
}

/** The first number in backticks in a cell: the constant the document gives. */
function constant(cell: string): bigint {
  const m = /`(0x[0-9a-fA-F]+|\d+)`/.exec(cell);
  if (!m) throw new Error(`no constant in "${cell}"`);
  return BigInt(m[1]);
}

/** "64 + nodeIdLen", "0x30", "8": a sum of numbers and already-known field values. */
function evaluate(expr: string, vars: Record<string, number>): number {
  return expr.split('+').reduce((sum, term) => {
    const t = term.trim().replace(/`/g, '');
    if (/^(0x[0-9a-fA-F]+|\d+)$/.test(t)) return sum + Number(t);
    if (!(t in vars)) throw new Error(`"${expr}" names ${t}, which is not known yet`);
    return sum + vars[t];
  }, 0);
}

/** A byte layout: the document's field | offset | size | ... table. */
interface Field {
  name: string;
  offset: string;
  size: string;
  value: string;
}

function layout(rows: Row[]): Field[] {
  return rows.map((r) => ({ name: r.field.replace(/`/g, ''), offset: r.offset, size: r.size, value: r.value ?? r.meaning ?? '' }));
}

/** Integer fields are those of a literal size 1, 2, 4 or 8; the rest are byte strings. */
function isInteger(f: Field): boolean {
  return /^(1|2|4|8)$/.test(f.size);
}

/** Lays out `values` (one per field of the document's table, no more, no fewer). */
function encode(fields: Field[], values: Record<string, bigint | Buffer>): Buffer {
  const unknown = fields.filter((f) => !(f.name in values)).map((f) => f.name);
  if (unknown.length) throw new Error(`the document's layout has fields this peer does not fill: ${unknown.join(', ')}`);
  const unused = Object.keys(values).filter((name) => !fields.some((f) => f.name === name));
  if (unused.length) throw new Error(`the document's layout lacks fields: ${unused.join(', ')}`);
  const vars: Record<string, number> = {};
  const placed: { at: number; bytes: Buffer }[] = [];
  for (const f of fields) {
    const v = values[f.name];
    const at = evaluate(f.offset, vars);
    const size = evaluate(f.size, vars);
    let bytes: Buffer;
    if (isInteger(f)) {
      if (typeof v !== 'bigint') throw new Error(`${f.name} is an integer of ${size} bytes`);
      if (v < 0n || v >= 1n << BigInt(8 * size)) throw new Error(`${f.name} = ${v} does not fit ${size} bytes`);
      bytes = Buffer.alloc(size);
      for (let i = 0; i < size; i++) bytes[i] = Number((v >> BigInt(8 * i)) & 0xffn);
      vars[f.name] = Number(v);
    } else {
      bytes = typeof v === 'bigint' ? Buffer.alloc(size) : v; // a bigint for a byte string: zeros
      if (typeof v === 'bigint' && v !== 0n) throw new Error(`${f.name} is a byte string`);
      if (bytes.length !== size) throw new Error(`${f.name} is ${size} bytes by the document, ${bytes.length} here`);
    }
    placed.push({ at, bytes });
  }
  const out = Buffer.alloc(Math.max(...placed.map((p) => p.at + p.bytes.length)));
  for (const p of placed) p.bytes.copy(out, p.at);
  return out;
}

/** The fields of the layout at the start of buf, or undefined while buf does not hold them all. */
function decode(fields: Field[], buf: Buffer): { values: Record<string, bigint | Buffer>; size: number } | undefined {
  const vars: Record<string, number> = {};
  const values: Record<string, bigint | Buffer> = {};
  let size = 0;
  for (const f of fields) {
    const at = evaluate(f.offset, vars);
    const n = evaluate(f.size, vars);
    if (buf.length < at + n) return undefined;
    if (isInteger(f)) {
      let v = 0n;
      for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(buf[at + i]);
      values[f.name] = v;
      vars[f.name] = Number(v);
    } else {
      values[f.name] = Buffer.from(buf.subarray(at, at + n));
    }
    size = Math.max(size, at + n);
  }
  return { values, size };
}

/** Fields of fixed place and size must tile bytes 0..n without gaps or overlaps. */
function fixedExtent(fields: Field[]): number {
  let end = 0;
  for (const f of fields) {
    if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(f.offset) || !/^\d+$/.test(f.size)) break;
    expect({ field: f.name, offset: Number(f.offset) }).toEqual({ field: f.name, offset: end });
    end = Number(f.offset) + Number(f.size);
  }
  return end;
}

const doc = fs.readFileSync(path.join(ROOT, 'docs', 'protocol.md'), 'utf8');

/** What the tcp part of the document says, read once. */
const tcp = (() => {
  const helloText = section(doc, 'rvma wire protocols', 'Hello');
  const headerText = section(doc, 'rvma wire protocols', 'Frame header');
  const hello = layout(table(helloText, ['field', 'offset', 'size', 'value']));
  const header = layout(table(headerText, ['field', 'offset', 'size', 'meaning']));
  const flags = table(headerText, ['flag', 'bit', 'value', 'frames', 'meaning']);
  const types = table(section(doc, 'rvma wire protocols', 'Frame types'), ['type', 'name', 'sent by', 'flags', 'status', 'parts', 'id', 'vaddr, offset', 'len', 'followed by']);
  const row = (name: string): Field => {
    const f = hello.find((x) => x.name === name);
    if (!f) throw new Error(`the hello table has no ${name}`);
    return f;
  };
  const type = (name: string): number => {
    const r = types.find((t) => t.name === name);
    if (!r) throw new Error(`the frame types table has no ${name}`);
    return Number(r.type);
  };
  const flag = (name: string): number => {
    const r = flags.find((f) => f.flag === name);
    if (!r) throw new Error(`the flags table has no ${name}`);
    const value = Number(constant(r.value));
    if (value !== 1 << Number(r.bit)) throw new Error(`flag ${name}: value ${r.value} is not bit ${r.bit}`);
    return value;
  };
  return {
    helloText,
    headerText,
    hello,
    header,
    magic: constant(row('magic').value),
    version: constant(row('version').value),
    type,
    flag,
  };
})();

// ---- Speaking it ---------------------------------------------------------------------------

/** A frame's fields (only their names from support/tcp-wire.ts: their layout comes from the document). */
interface Frame extends Omit<ParsedFrame, 'text'> {
  /** Error text, or a put's payload. */
  body: Buffer;
}

function header(f: Partial<Omit<Frame, 'body'>> & { type: number }): Buffer {
  return encode(tcp.header, {
    type: BigInt(f.type),
    flags: BigInt(f.flags ?? 0),
    status: BigInt(f.status ?? 0),
    parts: BigInt(f.parts ?? 0),
    id: f.id ?? 0n,
    vaddr: f.vaddr ?? 0n,
    offset: f.offset ?? 0n,
    len: f.len ?? 0n,
  });
}

/** The frames in buf (from its start), laid out by the document's header table. */
function frames(buf: Buffer): Frame[] {
  const out: Frame[] = [];
  for (let at = 0; ; ) {
    const h = decode(tcp.header, buf.subarray(at));
    if (!h) return out;
    const v = h.values as Record<string, bigint>;
    const type = Number(v.type);
    const carries = [tcp.type('Error'), tcp.type('Put'), tcp.type('RawWrite')].includes(type);
    const bodyLen = carries ? Number(v.len) : 0;
    if (buf.length - at - h.size < bodyLen) return out;
    const body = Buffer.from(buf.subarray(at + h.size, at + h.size + bodyLen));
    out.push({
      type,
      flags: Number(v.flags),
      status: Number(v.status),
      parts: Number(v.parts),
      id: v.id,
      vaddr: v.vaddr,
      offset: v.offset,
      len: v.len,
      body,
    });
    at += h.size + bodyLen;
  }
}

/** A raw socket to the endpoint: everything it received, and bounded waits on it. */
class Peer {
  private readonly chunks: Buffer[] = [];
  private closed = false;
  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => this.chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => (this.closed = true));
  }

  static connect(address: string): Peer {
    const m = /^tcp:\/\/(.+):(\d+)$/.exec(address);
    if (!m) throw new Error(`not a tcp address: ${address}`);
    return new Peer(net.connect({ host: m[1], port: Number(m[2]) }));
  }

  received(): Buffer {
    return Buffer.concat(this.chunks);
  }

  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => this.socket.write(bytes, () => resolve()));
  }

  /** Polls what arrived until `check` finds something; throws after WAIT_MS, or if the endpoint closed first. */
  async until<T>(what: string, check: (all: Buffer) => T | undefined): Promise<T> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const found = check(this.received());
      if (found !== undefined) return found;
      if (this.closed) throw new Error(`the endpoint closed the connection before ${what}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${WAIT_MS} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

describe.each(PROGRESS_MODES)('docs/protocol.md, tcp (%s progress)', (progress) => {
  const endpoints = trackEndpoints();
  const peers: Peer[] = [];
  afterEach(() => peers.splice(0).forEach((p) => p.destroy()));

  test('the document\'s tables are whole: the hello\'s and the header\'s fixed fields tile their bytes', () => {
    // "a fixed part of 32 bytes, then a 32-byte nonce"; "Every frame starts with a 40-byte header."
    const fixed = /a fixed part of (\d+) bytes, then a (\d+)-byte\s+nonce/.exec(tcp.helloText);
    expect(fixed).not.toBeNull();
    const extent = fixedExtent(tcp.hello);
    expect(extent).toBe(Number(fixed![1]) + Number(fixed![2]));
    expect(tcp.hello.find((f) => f.name === 'nonce')).toMatchObject({ size: fixed![2] });
    const headerBytes = /starts with a (\d+)-byte header/.exec(tcp.headerText);
    expect(headerBytes).not.toBeNull();
    expect(fixedExtent(tcp.header)).toBe(Number(headerBytes![1]));
    expect(tcp.header.every(isInteger)).toBe(true);
  });

  test('a peer built from the document is accepted: hello and Window back, Ping gets Pong, Puts are placed and acknowledged', async () => {
    const listener = await endpoints.create({ nodeId: uniqueNodeId('doc-listener'), listen: 'tcp://127.0.0.1:0', progress });
    const errors: ProtocolErrorInfo[] = [];
    listener.on('protocolError', (info: ProtocolErrorInfo) => errors.push(info));
    const mailbox = listener.openMailbox(VADDR, { epoch: 'ops', threshold: 2, reportSender: true });
    mailbox.post(64);

    const peer = Peer.connect(listener.address);
    peers.push(peer);

    // The endpoint greets first: its hello, read with the document's layout (checked below,
    // once the endpoint has said what it thinks of ours).
    const theirs = await peer.until('the endpoint\'s hello', (all) => decode(tcp.hello, all));

    // Ours, from the document's table: every field it names, and only those.
    const nodeId = uniqueNodeId('doc-peer');
    const id = Buffer.from(nodeId);
    await peer.write(
      encode(tcp.hello, {
        magic: tcp.magic,
        version: tcp.version,
        nodeIdLen: BigInt(id.length),
        incarnation: 0x1122334455667788n,
        addressLen: 0n,
        flags: 0n,
        reserved: 0n,
        nonce: randomBytes(32),
        'node id': id,
        'listen address': Buffer.alloc(0),
      }),
    );

    const after = (all: Buffer): Frame[] => frames(all.subarray(theirs.size));
    const errorFrame = (got: Frame[]): string | undefined => {
      const e = got.find((f) => f.type === tcp.type('Error'));
      return e ? `the endpoint sent an Error frame: "${e.body.toString()}"` : undefined;
    };
    /** The first frame of `type` from the `from`-th frame on; fails at once on an Error frame. */
    const next = async (what: string, from: number, type: number): Promise<Frame> =>
      peer.until(what, (all) => {
        const got = after(all);
        const refused = errorFrame(got);
        if (refused) throw new Error(`${refused} (waiting for ${what})`);
        return got.slice(from).find((f) => f.type === type);
      });

    // Accepted: a Window frame, not an Error frame.
    const window = await next('a Window frame', 0, tcp.type('Window'));
    expect(window).toMatchObject({ flags: 0, status: 0, parts: 0, vaddr: 0n, offset: 0n, len: 0n });
    expect(window.id).not.toBe(0n);
    const h = theirs.values;
    expect(h.magic).toBe(tcp.magic);
    expect(h.version).toBe(tcp.version);
    expect(h.flags).toBe(0n); // no auth
    expect(h.incarnation).not.toBe(0n);
    expect((h.reserved as Buffer).equals(Buffer.alloc((h.reserved as Buffer).length))).toBe(true);
    expect((h['node id'] as Buffer).toString()).toBe(listener.nodeId);
    expect((h['listen address'] as Buffer).toString()).toBe(listener.address);
    await peer.write(header({ type: tcp.type('Window'), id: 1n }));

    // The header's layout: a Ping answered by a Pong.
    let seen = after(peer.received()).length;
    await peer.write(header({ type: tcp.type('Ping') }));
    const pong = await next('a Pong', seen, tcp.type('Pong'));
    expect(pong).toMatchObject({ flags: 0, status: 0, parts: 0, id: 0n, vaddr: 0n, offset: 0n, len: 0n });

    // A Put at an explicit offset, with no flags: placed, answered by an Ack.
    const answer = async (putId: bigint, from: number): Promise<Frame> =>
      peer.until(`the answer to put ${putId}`, (all) => {
        const got = after(all);
        const refused = errorFrame(got);
        if (refused) throw new Error(refused);
        const kinds = [tcp.type('Ack'), tcp.type('Nack'), tcp.type('Acks')];
        return got.slice(from).find((f) => kinds.includes(f.type));
      });
    seen = after(peer.received()).length;
    const hello = Buffer.from('hello');
    await peer.write(Buffer.concat([header({ type: tcp.type('Put'), id: 1n, vaddr: VADDR, offset: 16n, len: BigInt(hello.length) }), hello]));
    const ack1 = await answer(1n, seen);
    expect(ack1).toMatchObject({ type: tcp.type('Ack'), flags: 0, status: 0, parts: 0, id: 1n, vaddr: 0n, offset: 0n, len: 0n });

    // An append with the lazy-ack flag, both as the document's flags table gives them: placed at
    // the append position (0), and its Ack still comes, held back at most briefly.
    seen = after(peer.received()).length;
    const xyz = Buffer.from('xyz');
    const flags = tcp.flag('append') | tcp.flag('lazy ack');
    await peer.write(Buffer.concat([header({ type: tcp.type('Put'), flags, id: 2n, vaddr: VADDR, len: BigInt(xyz.length) }), xyz]));
    const ack2 = await answer(2n, seen);
    expect(ack2).toMatchObject({ type: tcp.type('Ack'), flags: 0, status: 0, parts: 0, id: 2n, vaddr: 0n, offset: 0n, len: 0n });

    // Both placed where the document says, counted as two puts, from the node our hello named.
    const done = await mailbox.next({ timeout: WAIT_MS });
    expect(done.ops).toBe(2);
    expect(done.bytes).toBe(hello.length + xyz.length);
    expect(done.sender).toBe(nodeId);
    const buffer = Buffer.from(done.buffer);
    expect(buffer.subarray(16, 16 + hello.length).equals(hello)).toBe(true);
    expect(buffer.subarray(0, xyz.length).equals(xyz)).toBe(true);

    expect(errorFrame(after(peer.received()))).toBeUndefined();
    expect(errors).toEqual([]);
  });
});

// ---- shm: the document's handshake table against the native constants and encoder ---------

describe('docs/protocol.md, shm handshake', () => {
  const source = (file: string): string => fs.readFileSync(path.join(ROOT, 'native', 'providers', 'shm', file), 'utf8');
  const code = (text: string, name: string): bigint => {
    const m = new RegExp(`\\b${name}\\s*=\\s*(0x[0-9a-fA-F]+|\\d+)`).exec(text);
    if (!m) throw new Error(`no ${name} in the shm sources`);
    return BigInt(m[1]);
  };

  test('version, magic, kinds, flags and field offsets are the code\'s', () => {
    const layoutH = source('shm_layout.h');
    const helloH = source('shm_hello.h');
    const helloCpp = source('shm_hello.cpp');
    const text = section(doc, 'Shared memory (shm)', 'Handshake');
    const fields = layout(table(text, ['field', 'offset', 'size', 'value']));
    const field = (name: string): Field => {
      const f = fields.find((x) => x.name === name);
      if (!f) throw new Error(`the shm handshake table has no ${name}`);
      return f;
    };

    const version = code(layoutH, 'kVersion');
    expect(constant(field('version').value)).toBe(version);
    expect(constant(field('magic').value)).toBe(code(layoutH, 'kMagic'));
    // The part's other mentions of the version agree.
    const part = doc.split(/^# /m).find((p) => p.startsWith('Shared memory (shm)'))!;
    expect(/^Protocol version (\d+) of the `shm` provider/m.exec(part)?.[1]).toBe(String(version));
    expect(/transport `"shm"`, version (\d+)/.exec(part)?.[1]).toBe(String(version));

    // kind: 1 Offer, 2 Accept, 3 Confirm.
    for (const kind of ['Offer', 'Accept', 'Confirm']) {
      const m = new RegExp(`(\\d+) ${kind}`).exec(field('kind').value);
      expect({ kind, value: m?.[1] }).toEqual({ kind, value: String(code(helloH, kind)) });
    }
    const flags = table(text, ['flag', 'bit', 'value', 'meaning']);
    const flagValue = (name: string): bigint => constant(flags.find((f) => f.flag === name)?.value ?? '');
    expect(flagValue('can pull')).toBe(code(helloH, 'kHelloFlagCanPull'));
    expect(flagValue('auth')).toBe(code(helloH, 'kHelloFlagAuth'));
    expect(flagValue('refused')).toBe(code(helloH, 'kHelloFlagRefused'));

    // The fixed part as encodeHello writes it: put(&field, size), ... in order.
    const encodeBody = helloCpp.slice(helloCpp.indexOf('std::vector<uint8_t> encodeHello'), helloCpp.indexOf('if (h.carriesNonce())'));
    const names: Record<string, string> = { magic: 'magic', version: 'version', kind: 'kind', flags: 'flags', idLen: 'nodeIdLen', incarnation: 'incarnation', ringBytes: 'ringBytes', probeAddress: 'probeAddress', probeValue: 'probeValue' };
    const written = [...encodeBody.matchAll(/put\(&(?:h\.)?(\w+), (\d+)\)/g)].map((m) => ({ name: names[m[1]] ?? m[1], size: Number(m[2]) }));
    let at = 0;
    const fromCode = written.map((w) => {
      const row = { field: w.name, offset: at, size: w.size };
      at += w.size;
      return row;
    });
    expect(at).toBe(Number(code(helloH, 'kHelloFixedBytes')));
    const fromDoc = fields.filter((f) => /^(0x[0-9a-fA-F]+|\d+)$/.test(f.offset) && f.name !== 'nonce').map((f) => ({ field: f.name, offset: Number(f.offset), size: Number(f.size) }));
    expect(fromDoc).toEqual(fromCode);
    expect(/layout below: (\d+) fixed bytes/.exec(text)?.[1]).toBe(String(at));
    expect(field('nonce')).toMatchObject({ offset: `0x${at.toString(16)}`, size: '32' });
  });
});

// ---- verbs: the document's hello against native/providers/verbs/verbs_wire.h -------------

describe('docs/protocol.md, verbs hello', () => {
  test('version, magic and the offsets verbs_wire.h pins are the code\'s', () => {
    const wire = fs.readFileSync(path.join(ROOT, 'native', 'providers', 'verbs', 'verbs_wire.h'), 'utf8');
    const code = (name: string): bigint => {
      const m = new RegExp(`\\b${name}\\s*=\\s*(0x[0-9a-fA-F]+|\\d+)`).exec(wire);
      if (!m) throw new Error(`no ${name} in verbs_wire.h`);
      return BigInt(m[1]);
    };
    const part = doc.split(/^# /m).find((p) => p.startsWith('RDMA (verbs)'));
    if (!part) throw new Error('docs/protocol.md has no part "# RDMA (verbs)"');
    const fields = layout(table(section(doc, 'RDMA (verbs)', 'Hello'), ['field', 'offset', 'size', 'value']));
    const field = (name: string): Field => {
      const f = fields.find((x) => x.name === name);
      if (!f) throw new Error(`the verbs hello table has no ${name}`);
      return f;
    };
    const version = code('kVersion');
    expect(constant(field('version').value)).toBe(version);
    expect(/The `verbs` provider's messages, version (\d+)/.exec(part)?.[1]).toBe(String(version));
    expect(/transport `"verbs"`, version (\d+)/.exec(part)?.[1]).toBe(String(version));
    expect(constant(field('header').value)).toBe(code('kMagic'));
    fixedExtent(fields.filter((f) => f.name !== 'node id'));
    // static_assert(offsetof(HelloMsg, flags) == 42 && ...) and sizeof(HelloMsg) == 88.
    for (const m of wire.matchAll(/offsetof\(HelloMsg, (\w+)\) == (\d+)/g)) {
      expect({ field: m[1], offset: field(m[1]).offset }).toEqual({ field: m[1], offset: m[2] });
    }
    expect(field('node id').offset).toBe(/sizeof\(HelloMsg\) == (\d+)/.exec(wire)?.[1]);
  });
});
