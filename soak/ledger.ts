// The harness's account of every many-to-one put: what each sender reserved, issued and was told
// (placed, or refused with a code), and what each sink found in its retired buffers. From these
// it decides, put by put, whether the put was delivered exactly once or failed typed, and lists
// every put it cannot account for.
import { AMBIGUOUS_CODES } from './protocol';

const UNKNOWN = 0;
const PLACED = 1;

/** A finding: an invariant the soak saw broken. */
export interface Finding {
  check: string;
  detail: string;
  /** Seconds since the soak started. */
  at: number;
}

interface Stream {
  sender: number;
  senderRole: string;
  incarnation: number;
  sink: number;
  reserved: number;
  issued: number;
  /** Per seq: 0 no outcome yet, 1 placed, 2+ refused (index into codes + 2). */
  outcome: Uint8Array;
  /** Per seq: when the harness learned the outcome, in 0.1 s since the start. */
  outcomeAt: Uint32Array;
  /** Per seq: how many times a sink found it (saturating). */
  arrivals: Uint8Array;
  maxArrived: number;
}

interface Life {
  incarnation: number;
  startedAt: number;
  endedAt?: number;
  /** 'killed' (by the fault injector), 'crashed', 'restarted' (asked to), 'stopped' (at the end). */
  how?: string;
  lastHeardAt: number;
}

export interface PutCounts {
  issued: number;
  placed: number;
  refused: number;
  refusedByCode: Record<string, number>;
  arrived: number;
  exactlyOnce: number;
  ambiguousArrived: number;
  ambiguousNotArrived: number;
  unsettledSenderDied: number;
  lostWithReceiver: number;
  duplicates: number;
  unaccounted: number;
}

function grow<T extends Uint8Array | Uint32Array>(a: T, need: number): T {
  if (need < a.length) return a;
  let size = a.length;
  while (size <= need) size *= 2;
  const out = new (a.constructor as new (n: number) => T)(size);
  out.set(a);
  return out;
}

export class PutLedger {
  private readonly streams = new Map<string, Stream>();
  private readonly codes: string[] = [];
  private readonly sinkLives = new Map<number, Life[]>();
  private readonly senderEnds = new Map<string, string>();
  private readonly sinkNames = new Map<number, string>();

  constructor(private readonly startedAt: number) {}

  private tenths(at: number): number {
    return Math.max(0, Math.round((at - this.startedAt) / 100));
  }

  private stream(sender: number, senderRole: string, incarnation: number, sink: number): Stream {
    const key = `${sender}/${incarnation}/${sink}`;
    let s = this.streams.get(key);
    if (!s) {
      s = {
        sender,
        senderRole,
        incarnation,
        sink,
        reserved: 0,
        issued: 0,
        outcome: new Uint8Array(1024),
        outcomeAt: new Uint32Array(1024),
        arrivals: new Uint8Array(1024),
        maxArrived: 0,
      };
      this.streams.set(key, s);
    }
    return s;
  }

  private codeIndex(code: string): number {
    let i = this.codes.indexOf(code);
    if (i < 0) i = this.codes.push(code) - 1;
    return i + 2;
  }

  reserve(sender: number, role: string, incarnation: number, sink: number, upTo: number): void {
    const s = this.stream(sender, role, incarnation, sink);
    s.reserved = Math.max(s.reserved, upTo);
  }

  outcomes(sender: number, role: string, incarnation: number, sink: number, issued: number, ok: [number, number][], failed: [number, string][], at: number): void {
    const s = this.stream(sender, role, incarnation, sink);
    s.issued = Math.max(s.issued, issued);
    const when = this.tenths(at);
    const set = (seq: number, value: number): void => {
      s.outcome = grow(s.outcome, seq);
      s.outcomeAt = grow(s.outcomeAt, seq);
      s.outcome[seq] = value;
      s.outcomeAt[seq] = when;
    };
    for (const [start, count] of ok) for (let seq = start; seq < start + count; seq++) set(seq, PLACED);
    for (const [seq, code] of failed) set(seq, this.codeIndex(code));
  }

  arrivals(sink: number, streams: { sender: number; incarnation: number; runs: [number, number][] }[], senderRole: (index: number) => string): void {
    for (const a of streams) {
      const s = this.stream(a.sender, senderRole(a.sender), a.incarnation, sink);
      for (const [start, count] of a.runs) {
        for (let seq = start; seq < start + count; seq++) {
          s.arrivals = grow(s.arrivals, seq);
          if (s.arrivals[seq] < 255) s.arrivals[seq]++;
          if (seq > s.maxArrived) s.maxArrived = seq;
        }
      }
    }
  }

  sinkStarted(sink: number, name: string, incarnation: number, at: number): void {
    this.sinkNames.set(sink, name);
    let lives = this.sinkLives.get(sink);
    if (!lives) this.sinkLives.set(sink, (lives = []));
    lives.push({ incarnation, startedAt: at, lastHeardAt: at });
  }

  sinkHeard(sink: number, incarnation: number, at: number): void {
    const life = this.sinkLives.get(sink)?.find((l) => l.incarnation === incarnation);
    if (life) life.lastHeardAt = Math.max(life.lastHeardAt, at);
  }

  sinkEnded(sink: number, incarnation: number, how: string, at: number): void {
    const life = this.sinkLives.get(sink)?.find((l) => l.incarnation === incarnation);
    if (life && life.endedAt === undefined) {
      life.endedAt = at;
      life.how = how;
    }
  }

  senderEnded(sender: number, incarnation: number, how: string): void {
    this.senderEnds.set(`${sender}/${incarnation}`, how);
  }

  /**
   * A placed put that no sink reported: accounted for when the sink incarnation that placed it
   * died abnormally before it could report it (it was heard from for less than graceMs after).
   */
  private lostWithReceiver(sink: number, placedBy: number): boolean {
    const at = this.startedAt + placedBy * 100;
    const graceMs = 5000;
    for (const life of this.sinkLives.get(sink) ?? []) {
      const couldHavePlaced = life.startedAt <= at && (life.endedAt === undefined || life.endedAt >= at - graceMs);
      if (couldHavePlaced && life.how && life.how !== 'stopped' && life.lastHeardAt < at + graceMs) return true;
    }
    return false;
  }

  /**
   * Classifies every put. final: all reports are in (every sender and sink has stopped); otherwise
   * only findings that cannot be undone later are made (a put found twice, found but never sent,
   * found although refused).
   */
  evaluate(final: boolean, now: number): { counts: PutCounts; findings: Finding[] } {
    const at = (now - this.startedAt) / 1000;
    const counts: PutCounts = {
      issued: 0,
      placed: 0,
      refused: 0,
      refusedByCode: {},
      arrived: 0,
      exactlyOnce: 0,
      ambiguousArrived: 0,
      ambiguousNotArrived: 0,
      unsettledSenderDied: 0,
      lostWithReceiver: 0,
      duplicates: 0,
      unaccounted: 0,
    };
    const examples = new Map<string, string[]>();
    const note = (check: string, text: string): void => {
      let list = examples.get(check);
      if (!list) examples.set(check, (list = []));
      list.push(text);
    };
    for (const s of this.streams.values()) {
      const name = (seq: number): string => `${s.senderRole}#${s.incarnation} -> ${this.sinkNames.get(s.sink) ?? s.sink} seq ${seq}`;
      const end = this.senderEnds.get(`${s.sender}/${s.incarnation}`);
      const senderDied = end !== undefined && end !== 'stopped';
      const last = Math.max(s.reserved, s.issued, s.maxArrived);
      for (let seq = 1; seq <= last; seq++) {
        const arrived = seq < s.arrivals.length ? s.arrivals[seq] : 0;
        const outcome = seq < s.outcome.length ? s.outcome[seq] : UNKNOWN;
        counts.arrived += arrived;
        if (arrived > 1) {
          counts.duplicates += arrived - 1;
          note('exactly-once', `${name(seq)} arrived ${arrived} times`);
        }
        if (arrived > 0 && (seq > s.reserved || (end === 'stopped' && seq > s.issued))) {
          counts.unaccounted++;
          note('exactly-once', `${name(seq)} arrived but was never sent`);
          continue;
        }
        if (outcome === PLACED) {
          counts.placed++;
          if (arrived === 1) counts.exactlyOnce++;
          else if (arrived === 0 && final) {
            if (this.lostWithReceiver(s.sink, s.outcomeAt[seq])) counts.lostWithReceiver++;
            else {
              counts.unaccounted++;
              note('exactly-once', `${name(seq)} was placed (its put resolved) but no sink reported it`);
            }
          }
        } else if (outcome >= 2) {
          const code = this.codes[outcome - 2];
          counts.refused++;
          counts.refusedByCode[code] = (counts.refusedByCode[code] ?? 0) + 1;
          if (AMBIGUOUS_CODES.has(code)) {
            if (arrived) counts.ambiguousArrived++;
            else counts.ambiguousNotArrived++;
          } else if (arrived) {
            counts.unaccounted++;
            note('exactly-once', `${name(seq)} was refused with ${code} but arrived`);
          }
        } else if (seq <= s.issued || arrived) {
          // Issued, no outcome: its sender died with it in flight, or (final, sender stopped) it never settled.
          if (senderDied) counts.unsettledSenderDied++;
          else if (final) {
            counts.unaccounted++;
            note('settled', `${name(seq)} was issued and never settled (no outcome, although every put has a timeout)`);
          }
        }
        if (outcome !== UNKNOWN || seq <= s.issued || arrived) counts.issued++;
      }
    }
    const findings: Finding[] = [];
    for (const [check, list] of examples) {
      const shown = list.slice(0, 5).join('; ');
      findings.push({ check, detail: `${list.length} put(s): ${shown}${list.length > 5 ? `; and ${list.length - 5} more` : ''}`, at });
    }
    return { counts, findings };
  }
}
