// Reads a V8 .cpuprofile (what --cpu-prof and the inspector's Profiler write) into per-step figures:
// idle, GC and program shares, self time by function and by file group, inclusive time of chosen functions.
import * as fs from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalUs: number;
  /** µs of self time by "function (file:line)". */
  byFunction: Map<string, number>;
  /** µs of self time by file group (src/rendezvous/mgr.ts, node:internal, ioredis, ...). */
  byGroup: Map<string, number>;
  /** µs of samples with the function anywhere on the stack, per function name asked for. */
  inclusive: Map<string, number>;
}

/** A file as a short group: library sources by path, dependencies by package, Node's own as one. */
export function groupOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native or builtin)';
  const dist = /\/dist\/((?:src|bench|examples|support)\/.*)\.js$/.exec(url);
  if (dist) return `${dist[1]}.ts`;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return dep[1];
  if (url.startsWith('node:')) return 'node: internals';
  return url;
}

export function readProfile(file: string, inclusiveOf: string[]): ProfileSummary {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byFunction = new Map<string, number>();
  const byGroup = new Map<string, number>();
  const inclusive = new Map<string, number>(inclusiveOf.map((f) => [f, 0]));
  const add = (m: Map<string, number>, k: string, v: number): void => void m.set(k, (m.get(k) ?? 0) + v);
  let totalUs = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    totalUs += dt;
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    const name = functionName || '(anonymous)';
    const group = groupOf(url, name);
    add(byFunction, url ? `${name} (${group}:${lineNumber + 1})` : name, dt);
    add(byGroup, group, dt);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const fn = nodes.get(at)!.callFrame.functionName;
      if (inclusive.has(fn) && !seen.has(fn)) {
        seen.add(fn);
        add(inclusive, fn, dt);
      }
    }
  });
  return { totalUs, byFunction, byGroup, inclusive };
}
