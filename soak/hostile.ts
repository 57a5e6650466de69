// Hostile clients, run in a child process of their own against the endpoints' listening tcp
// ports: slowloris (hellos trickled byte by byte, or never finished), peers that never read (a
// flood of Pings and puts whose answers pile up at the victim), connection floods (past the
// victim's descriptor limit), and TENSOR_REQUEST floods through a real endpoint (requests that
// park at the victim's rendezvous and are never served). Each returns what it saw; what it did
// to the victim (memory, descriptors, CPU, whether it still greets) the harness measures.
import * as net from 'node:net';
import { Packr } from 'msgpackr';
import { Endpoint, RvmaError } from '../src';
import { FrameType, HEADER_BYTES, encodeHeader, freshHello, splitAddress } from '../support/tcp-wire';

export type AttackKind = 'slowloris' | 'never-reading' | 'connection-flood' | 'tensor-request-flood';

export interface Victim {
  role: string;
  address: string;
  nodeId: string;
  incarnationId: string;
  /** The rendezvous task the victim hosts (tensor-request-flood). */
  task?: string;
  /** The victim's open-files limit (connection-flood opens more than that). */
  fdLimit?: number;
}

export interface AttackResult {
  [key: string]: number | string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How long a new connection to the victim takes to receive the victim's hello: ms, or -1 (none within timeoutMs), -2 (refused). */
export function probe(address: string, timeoutMs = 3000): Promise<number> {
  const { host, port } = splitAddress(address);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let got = 0;
    const done = (ms: number): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ms);
    };
    const timer = setTimeout(() => done(-1), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      got += chunk.length;
      if (got >= 32) done(Date.now() - started);
    });
    socket.on('error', () => done(-2));
    socket.on('close', () => done(got >= 32 ? Date.now() - started : -2));
  });
}

interface Tracked {
  socket: net.Socket;
  openedAt: number;
  connected: boolean;
  closedAt?: number;
  error?: string;
}

/**
 * A raw connection to address. read: take (and drop) what the victim sends, so that its close is
 * seen at once; without it, the socket never reads, and a close shows only when a write fails.
 */
function open(address: string, read: boolean, onConnect?: (s: net.Socket) => void): Tracked {
  const { host, port } = splitAddress(address);
  const socket = net.connect({ host, port });
  const t: Tracked = { socket, openedAt: Date.now(), connected: false };
  socket.on('connect', () => {
    t.connected = true;
    if (!read) socket.pause();
    onConnect?.(socket);
  });
  if (read) {
    socket.on('data', () => undefined);
    socket.on('end', () => (t.closedAt ??= Date.now()));
  }
  socket.on('error', (e: NodeJS.ErrnoException) => (t.error ??= e.code ?? e.message));
  socket.on('close', () => (t.closedAt ??= Date.now()));
  return t;
}

/** Hellos trickled a byte every byteEveryMs: half of them complete (too slowly), half stop after 10 bytes. */
export async function slowloris(victim: Victim, durationMs: number, connections = 48, byteEveryMs = 250): Promise<AttackResult> {
  const started = Date.now();
  const all: Tracked[] = [];
  for (let i = 0; i < connections; i++) {
    const hello = freshHello(`slowloris-${process.pid}-${i}`);
    const stopAt = i % 2 === 0 ? hello.length : 10;
    all.push(
      open(victim.address, true, (s) => {
        let at = 0;
        const timer = setInterval(() => {
          if (s.destroyed || at >= stopAt) return clearInterval(timer);
          s.write(hello.subarray(at, at + 1));
          at++;
        }, byteEveryMs);
        s.on('close', () => clearInterval(timer));
      }),
    );
  }
  await sleep(durationMs / 2);
  const probeMs = await probe(victim.address);
  await sleep(Math.max(0, started + durationMs - Date.now()));
  const half = (trickling: boolean): Tracked[] => all.filter((_, i) => (i % 2 === 0) === trickling);
  const closedAfter = (list: Tracked[]): string => {
    const ms = list.filter((t) => t.closedAt !== undefined).map((t) => t.closedAt! - t.openedAt);
    return ms.length ? `${Math.min(...ms)}-${Math.max(...ms)}` : '-';
  };
  const result: AttackResult = {
    opened: all.filter((t) => t.connected).length,
    closedByVictim: all.filter((t) => t.closedAt !== undefined).length,
    // A hello still arriving, byte by byte, when the attack ended.
    stillOpenTrickling: half(true).filter((t) => t.connected && t.closedAt === undefined).length,
    closedAfterMsTrickling: closedAfter(half(true)),
    // 10 bytes of a hello, then nothing.
    stillOpenStalled: half(false).filter((t) => t.connected && t.closedAt === undefined).length,
    closedAfterMsStalled: closedAfter(half(false)),
    stillOpenAtEnd: all.filter((t) => t.connected && t.closedAt === undefined).length,
    probeMs,
  };
  for (const t of all) t.socket.destroy();
  return result;
}

/**
 * Peers that complete the handshake, then send Pings and puts (to a vaddr with no mailbox, so
 * each is answered with a Nack) as fast as the victim takes them, and never read a byte: every
 * answer the victim makes waits in its send queue. At most maxFrames frames in all.
 */
export async function neverReading(victim: Victim, durationMs: number, connections = 4, maxFrames = 2_000_000): Promise<AttackResult> {
  const started = Date.now();
  let frames = 0;
  let puts = 0;
  let stalledMs = 0;
  const all = Array.from({ length: connections }, (_, i) => ({ t: open(victim.address, false), i }));
  const batchFrames = 1024;
  const frameBytes = HEADER_BYTES + 8; // a put carries 8 bytes; a ping is a bare header
  const runOne = async ({ t, i }: { t: Tracked; i: number }): Promise<void> => {
    while (!t.connected && !t.closedAt && Date.now() - started < durationMs) await sleep(10);
    if (!t.connected || t.closedAt) return;
    const s = t.socket;
    s.write(Buffer.concat([freshHello(`never-reading-${process.pid}-${i}`), encodeHeader({ type: FrameType.Window, id: BigInt(i + 1) })]));
    let id = 1n;
    while (!s.destroyed && Date.now() - started < durationMs && frames < maxFrames) {
      const batch = Buffer.alloc(batchFrames * frameBytes);
      let at = 0;
      for (let k = 0; k < batchFrames; k++) {
        if (k % 2 === 0) {
          encodeHeader({ type: FrameType.Ping }, batch, at);
          at += HEADER_BYTES;
        } else {
          encodeHeader({ type: FrameType.Put, id: id++, vaddr: 0x7eee_0000n, len: 8n }, batch, at);
          at += HEADER_BYTES + 8;
          puts++;
        }
      }
      frames += batchFrames;
      s.write(batch.subarray(0, at));
      // The victim stopped reading: wait, writing nothing more, until it reads again (or closes).
      while (s.writableNeedDrain && !s.destroyed && Date.now() - started < durationMs) {
        const t0 = Date.now();
        await Promise.race([new Promise((resolve) => s.once('drain', resolve)), sleep(200)]);
        stalledMs += Date.now() - t0;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const runs = all.map(runOne);
  await sleep(durationMs / 2);
  const probeMs = await probe(victim.address);
  await Promise.all(runs);
  await sleep(Math.max(0, started + durationMs - Date.now()));
  const result: AttackResult = {
    connected: all.filter(({ t }) => t.connected).length,
    framesSent: frames,
    putsSent: puts,
    closedByVictim: all.filter(({ t }) => t.closedAt !== undefined).length,
    closedAfterMs: all.filter(({ t }) => t.closedAt !== undefined).map(({ t }) => t.closedAt! - t.openedAt).join(' ') || '-',
    closeErrors: [...new Set(all.map(({ t }) => t.error).filter(Boolean))].join(' ') || 'none',
    writerStalledMs: stalledMs,
    probeMs,
  };
  for (const { t } of all) t.socket.destroy();
  return result;
}

/** count connections at once (each sends a valid hello), held for durationMs. */
export async function connectionFlood(victim: Victim, durationMs: number, count: number): Promise<AttackResult> {
  const started = Date.now();
  const all: Tracked[] = [];
  for (let i = 0; i < count; i++) {
    const hello = Buffer.concat([freshHello(`flood-${process.pid}-${i}`), encodeHeader({ type: FrameType.Window, id: 1n })]);
    all.push(open(victim.address, true, (s) => s.write(hello)));
    if (i % 64 === 63) await sleep(5);
  }
  await sleep(Math.min(2000, durationMs / 3));
  const probeMs = await probe(victim.address);
  await sleep(Math.max(0, started + durationMs - Date.now()));
  const errors = new Map<string, number>();
  for (const t of all) if (t.error) errors.set(t.error, (errors.get(t.error) ?? 0) + 1);
  const result: AttackResult = {
    attempted: count,
    connected: all.filter((t) => t.connected).length,
    closedByVictim: all.filter((t) => t.connected && t.closedAt !== undefined).length,
    errors: [...errors].map(([e, n]) => `${e}:${n}`).join(' ') || 'none',
    probeMs,
  };
  for (const t of all) t.socket.destroy();
  return result;
}

// The rendezvous control record, encoded as src/rendezvous/messages.ts does (independently).
const packr = new Packr({ useRecords: false, int64AsType: 'number' });
const CONTROL_VADDR = 0x10n;
const TENSOR_REQUEST = 1;

/**
 * TENSOR_REQUESTs for keys the victim hosts, each in a step of its own that the victim never
 * uses, sent by a real endpoint (so they are not forged): each parks at the victim until its
 * step is cleaned up, which never happens.
 */
export async function tensorRequestFlood(victim: Victim, durationMs: number, count = 20_000, window = 64): Promise<AttackResult> {
  if (!victim.task) throw new Error(`tensor-request-flood: ${victim.role} hosts no rendezvous task`);
  const started = Date.now();
  const endpoint = await Endpoint.create({ nodeId: `hostile-rdv-${process.pid}-${started}`, provider: 'tcp' });
  const key = `${victim.task}/device:CPU:0;${victim.incarnationId};/job:hostile/replica:0/task:0/device:CPU:0;t0;0:0`;
  const codes = new Map<string, number>();
  let sent = 0;
  let ok = 0;
  let inflight = 0;
  try {
    while (sent < count && Date.now() - started < durationMs) {
      if (inflight >= window) {
        await sleep(1);
        continue;
      }
      const n = sent++;
      const message = packr.pack({
        kind: TENSOR_REQUEST,
        from: endpoint.nodeId,
        fromIncarnation: endpoint.incarnation,
        key,
        stepId: String(2 ** 40 + n),
        requestIndex: n,
        dataVaddr: '0',
        cachedMeta: null,
      });
      inflight++;
      endpoint
        .put(victim.address, CONTROL_VADDR, message, { timeout: 10_000, noBufferRetryMs: 2000 })
        .then(
          () => void ok++,
          (e: unknown) => {
            const code = e instanceof RvmaError ? e.code : 'UNTYPED';
            codes.set(code, (codes.get(code) ?? 0) + 1);
          },
        )
        .finally(() => inflight--);
    }
    for (const until = Date.now() + 12_000; inflight > 0 && Date.now() < until; ) await sleep(10);
  } finally {
    await endpoint.close();
  }
  const probeMs = await probe(victim.address);
  return {
    requestsSent: sent,
    requestsPlaced: ok,
    failures: [...codes].map(([c, k]) => `${c}:${k}`).join(' ') || 'none',
    probeMsAfter: probeMs,
  };
}
