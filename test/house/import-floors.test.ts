// The TypeScript side is built in floors, and every import runs down a floor or stays on its own:
// base (errors, validation, waits) under the directories, the tensor codec and the mailbox
// layer; the rendezvous and the ring on the mailbox layer; the package's entry on those; the
// command line on the entry. The shared launchers (support/) sit on the library, and examples
// and benchmarks on both, apart from each other. This test reads every import of src/,
// support/, examples/, bench/ and soak/ (type imports too) and fails on one that runs up, and on
// any circle of imports between files of different folders.
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const DIRS = ['src', 'support', 'examples', 'bench', 'soak'];

/** Each floor and the floors below it that it may import (its own always). */
const FLOORS: Record<string, string[]> = {
  base: [],
  directory: ['base'],
  tensor: ['base'],
  mailbox: ['base', 'directory'],
  rendezvous: ['base', 'directory', 'tensor', 'mailbox'],
  ring: ['base', 'directory', 'tensor', 'mailbox'],
  entry: ['base', 'directory', 'tensor', 'mailbox', 'rendezvous', 'ring'],
  cli: ['base', 'directory', 'tensor', 'mailbox', 'rendezvous', 'ring', 'entry'],
  support: ['base', 'directory', 'tensor', 'mailbox', 'rendezvous', 'ring', 'entry'],
  examples: ['base', 'directory', 'tensor', 'mailbox', 'rendezvous', 'ring', 'entry', 'support'],
  bench: ['base', 'directory', 'tensor', 'mailbox', 'rendezvous', 'ring', 'entry', 'cli', 'support'],
  soak: ['base', 'directory', 'tensor', 'mailbox', 'rendezvous', 'ring', 'entry', 'support'],
};

/** A file's floor, from its path relative to the repository. */
function floorOf(file: string): string {
  const [top, sub] = file.split('/');
  if (top !== 'src') return top;
  if (file === 'src/index.ts') return 'entry';
  if (file === 'src/native.ts') return 'mailbox'; // the addon's binding, with the layer it serves
  return sub;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sources(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]*)['"]/gm;

/** The repository files a source file imports (relative specifiers that resolve to a .ts file). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]));
    const target = [`${base}.ts`, `${base}/index.ts`, base].find((c) => c.endsWith('.ts') && fs.existsSync(path.join(ROOT, c)));
    if (target) out.push(target);
  }
  return out;
}

type Graph = Map<string, string[]>;

/** Imports that run up a floor or across to a sibling, as "from (floor) imports to (floor)". */
function upward(graph: Graph): string[] {
  const wrong: string[] = [];
  for (const [from, targets] of graph) {
    const floor = floorOf(from);
    for (const to of targets) {
      const target = floorOf(to);
      if (target !== floor && !FLOORS[floor].includes(target)) wrong.push(`${from} (${floor}) imports ${to} (${target})`);
    }
  }
  return wrong;
}

/** Circles of imports (Tarjan's strongly connected components) through files of more than one folder. */
function circles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (new Set(component.map((f) => path.posix.dirname(f))).size > 1) found.push(component.sort());
  };
  for (const f of graph.keys()) if (!index.has(f)) visit(f);
  return found;
}

const files = DIRS.flatMap(sources);
const graph: Graph = new Map(files.map((f) => [f, importsOf(f)]));

test('the floors are known and every folder of src/ is one', () => {
  for (const f of files) expect([f, FLOORS[floorOf(f)] !== undefined]).toEqual([f, true]);
  expect(graph.size).toBeGreaterThan(200); // the scan found the sources
});

test('no import runs up a floor or across to a sibling', () => {
  expect(upward(graph)).toEqual([]);
});

test('no circle of imports runs through files of different folders', () => {
  expect(circles(graph)).toEqual([]);
});

test('the checks see an import that runs up and a circle across folders', () => {
  const bent: Graph = new Map([
    ['src/base/errors.ts', ['src/mailbox/endpoint.ts']],
    ['src/mailbox/endpoint.ts', ['src/base/errors.ts', 'src/mailbox/mailbox.ts']],
    ['src/mailbox/mailbox.ts', ['src/mailbox/endpoint.ts']],
    ['bench/ring/run.ts', ['examples/pipeline/pipe.ts']],
  ]);
  expect(upward(bent)).toEqual([
    'src/base/errors.ts (base) imports src/mailbox/endpoint.ts (mailbox)',
    'bench/ring/run.ts (bench) imports examples/pipeline/pipe.ts (examples)',
  ]);
  // The circle inside src/mailbox alone is a folder's own business; the one through base is not.
  expect(circles(bent)).toEqual([['src/base/errors.ts', 'src/mailbox/endpoint.ts', 'src/mailbox/mailbox.ts']]);
});
