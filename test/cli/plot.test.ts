// Plots of saved benchmark results: a real bench:tcp run and its rate part (fixtures), and
// bench:ring and bench:rendezvous records made by their own report builders and saveResults.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Measurement, type Scenario } from '../../bench/common/protocol';
import { buildReport, type Samples } from '../../bench/common/report';
import { saveResults } from '../../bench/common/results';
import { type PlacedVariant as StepVariant, TARGETS as STEP_TARGETS, TRANSPORTS as STEP_TRANSPORTS, placedId as stepId, scenarios as stepScenarios } from '../../bench/rendezvous/config';
import { reportSpec } from '../../bench/rendezvous/report';
import { TARGETS as RING_TARGETS, TRANSPORTS as RING_TRANSPORTS, scenarios as ringScenarios } from '../../bench/ring/config';
import { buildRingReport, type PlacedVariant, placedId } from '../../bench/ring/report';
import { type Plot, plotRecord, writePlots } from '../../src/cli/plot';
import { readResults } from '../../src/cli/plot/read-results';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'results');
const TCP = path.join(FIXTURES, 'tcp-2026-12-01T22-29-31Z.json');
const RATE = path.join(FIXTURES, 'tcp-rate-2026-12-01T22-29-45Z.json');

type Json = Record<string, any>;
const load = (file: string): Json => JSON.parse(fs.readFileSync(file, 'utf8'));
const count = (svg: string, text: string): number => svg.split(text).length - 1;
const byName = (plots: Plot[], name: string): string => plots.find((p) => p.name === name)!.svg;

let work: string;
const resultsDir = process.env.RVMA_BENCH_RESULTS_DIR;
beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'rvma-plot-'));
  // saveResults writes here (rvma bench --out's variable), whatever the environment says.
  process.env.RVMA_BENCH_RESULTS_DIR = path.join(work, 'results');
});
afterAll(() => {
  if (resultsDir === undefined) delete process.env.RVMA_BENCH_RESULTS_DIR;
  else process.env.RVMA_BENCH_RESULTS_DIR = resultsDir;
  fs.rmSync(work, { recursive: true, force: true });
});

// vega-lite warns (and guesses) where layers or panels disagree: every spec must compile cleanly.
let warn: jest.SpyInstance;
beforeEach(() => {
  warn = jest.spyOn(console, 'warn');
});
afterEach(() => {
  expect(warn.mock.calls).toEqual([]);
  warn.mockRestore();
});

/** One measurement whose figures are `us` µs per op (and a bandwidth of its size over that). */
function measurement(s: Scenario, us: number): Measurement {
  const ops = s.count;
  return { ops, bytes: ops * s.size, elapsedNs: ops * us * 1000, medianOpNs: us * 1000, p99OpNs: us * 1500, senderCpuNs: ops * us * 300, receiverCpuNs: ops * us * 300 };
}

/** bench:ring's record as run.ts saves it: two placements, every ring, the same units. */
function ringRecord(): Json {
  const scenarios = ringScenarios(true, undefined);
  const variants: PlacedVariant[] = (['same', 'none'] as const).flatMap((placement) =>
    RING_TRANSPORTS.map((t) => ({ ...t, id: placedId(t.id, placement), ring: t.id, placement })),
  );
  const samples: Samples = {};
  variants.forEach((v, i) => {
    samples[v.id] = {};
    // around() takes 3 hops: its ratio to the hop time is not a ratio of two rings at one scenario.
    for (const s of scenarios) if (!v.only || v.only.includes(s.id)) samples[v.id][s.id] = [measurement(s, (10 + i) * (s.id === 'around' ? 3 : 1))];
  });
  const file = saveResults(work, 'ring', {
    loadBefore: [0, 0, 0],
    config: { repetitions: 1, quick: true, scenarios, variants, targets: RING_TARGETS },
    report: buildRingReport(scenarios, variants, samples),
    samples,
    errors: [],
    seconds: 1,
    extra: {
      units: {
        hop: 'µs per hop (round trip / 3), median of per-frame times; hopP99 likewise at p99',
        frames: 'frames per second back at rank 0',
        around: 'µs per ring.around()',
        cpuHop: 'CPU µs per frame, all ranks, hop scenario',
        cpuFrames: 'CPU µs per frame, all ranks, frames scenario',
      },
    },
  });
  return load(file);
}

/** bench:rendezvous's record as run.ts saves it, both placements. */
function rendezvousRecord(): Json {
  const scenarios = stepScenarios(true).map((s) => ({ ...s, transport: 'put' as const }));
  const variants: StepVariant[] = (['same', 'split'] as const).flatMap((placement) =>
    STEP_TRANSPORTS.map((t) => ({ id: stepId(t.id, placement), label: t.label, transport: t.id, placement })),
  );
  const samples: Samples = {};
  variants.forEach((v, i) => {
    samples[v.id] = Object.fromEntries(scenarios.map((s) => [s.id, [measurement(s, 20 + 3 * i)]]));
  });
  const spec = reportSpec(scenarios, variants);
  const file = saveResults(work, 'rendezvous', {
    loadBefore: [0, 0, 0],
    config: { repetitions: 1, quick: true, subject: spec.subject, scenarios, variants, targets: STEP_TARGETS },
    report: buildReport(spec, samples),
    samples,
    errors: [],
    seconds: 1,
    extra: { units: { ping: 'µs per round trip (median of per-step times); p99OpNs likewise', bw: 'MiB/s of tensor bytes' } },
  });
  return load(file);
}

describe('plots of a bench:tcp record', () => {
  const record = load(TCP);
  const bwVariants = ['mailbox put (loop)', 'raw write (loop)', 'node net.Socket', 'C sockets', 'mailbox put (thread)', 'mailbox put (loop, 2 stripes)'];

  test('bandwidth: a line per variant over the sizes, the targets as marks (the subject found from the ratios)', async () => {
    const plots = await plotRecord(record, TCP);
    expect(plots.map((p) => p.name)).toEqual(['bandwidth', 'round-trips']);
    const svg = byName(plots, 'bandwidth');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    for (const label of [...bwVariants, '64 KiB', '1 MiB', '16 MiB', 'MiB/s']) expect(svg).toContain(`>${label}<`);
    // 7 bandwidth ratios have a target; mailbox missed 0.90 x C sockets at 1 MiB and 0.95 x raw at 64 KiB.
    expect(count(svg, 'aria-label="min target (met): mailbox put (loop)')).toBe(5);
    expect(count(svg, 'aria-label="min target (missed): mailbox put (loop)')).toBe(2);
    expect(svg).toContain('>min target (met)<');
    expect(svg).toContain('>min target (missed)<');
    expect(plots[0].title).toBe('tcp: bandwidth, 2026-12-01 22:29:31 UTC, commit 9d47a904e4');
  });

  test('round trips: a bar per variant, the time target on the subject', async () => {
    const svg = byName(await plotRecord(record, TCP), 'round-trips');
    expect(svg.startsWith('<svg')).toBe(true);
    for (const label of bwVariants.slice(0, 5)) expect(svg).toContain(`>${label}<`);
    expect(count(svg, '>mailbox put (loop, 2 stripes)<')).toBe(0); // no round trip measured
    expect(svg).toContain('µs per round trip');
    expect(count(svg, 'aria-label="max target (met): mailbox put (loop) &lt;= 1 x node net.Socket at RTT 8 B')).toBe(1);
  });

  test('config.subject decides whose the ratios are; one they do not fit gets no marks', async () => {
    const named = await plotRecord({ ...record, config: { ...record.config, subject: 'mailbox' } });
    expect(count(byName(named, 'bandwidth'), 'aria-label="min target')).toBe(7);
    const wrong = await plotRecord({ ...record, config: { ...record.config, subject: 'c' } });
    expect(count(byName(wrong, 'bandwidth'), 'aria-label="min target')).toBe(0);
  });

  test('without config.subject and two variants that fit the ratios alike, no marks', async () => {
    const variants = [...record.config.variants, { id: 'twin', label: 'twin' }];
    const plots = await plotRecord({ ...record, config: { ...record.config, variants }, medians: { ...record.medians, twin: record.medians.mailbox } });
    expect(plots.map((p) => p.name)).toEqual(['bandwidth', 'round-trips']);
    for (const p of plots) expect(count(p.svg, 'target')).toBe(0);
  });
});

describe("the repetitions' min to max", () => {
  /** The fixture with every cell measured three times: as recorded, 0.8 and 1.25 times as long. */
  function spread(): Json {
    const record = load(TCP);
    for (const row of Object.values(record.samples) as Json[]) {
      for (const cell of Object.values(row) as Json[][]) {
        const m = cell[0];
        cell.push({ ...m, elapsedNs: m.elapsedNs * 0.8, medianOpNs: m.medianOpNs * 0.8 }, { ...m, elapsedNs: m.elapsedNs * 1.25, medianOpNs: m.medianOpNs * 1.25 });
      }
    }
    return record;
  }

  test('each median gets the range of its repetitions, drawn as whiskers on both charts', async () => {
    const record = spread();
    const r = readResults(record, TCP);
    for (const [variant, row] of Object.entries(r.medians)) {
      for (const [scenario, median] of Object.entries(row)) {
        const [min, max] = r.ranges[variant][scenario];
        expect(min).toBeCloseTo(median * 0.8, 6);
        expect(max).toBeCloseTo(median * 1.25, 6);
      }
    }
    const plots = await plotRecord(record, TCP);
    for (const name of ['bandwidth', 'round-trips']) expect(byName(plots, name)).toContain('mark-rule role-mark');
  });

  test('no range where the samples do not give back the median, and none without samples', async () => {
    const record = spread();
    record.samples.net.rtt8[0].medianOpNs *= 3; // the middle of three is no longer the median recorded
    const r = readResults(record, TCP);
    expect(r.ranges.net.rtt8).toBeUndefined();
    expect(r.ranges.mailbox.rtt8).toBeDefined();
    delete record.samples;
    expect(readResults(record, TCP).ranges).toEqual({});
    for (const plot of await plotRecord(record, TCP)) expect(plot.svg).not.toContain('mark-rule role-mark');
  });
});

describe('writePlots', () => {
  test('writes the SVG and PNG files it returns', async () => {
    const out = path.join(work, 'out');
    const files = await writePlots(TCP, { outDir: out });
    const base = path.join(out, 'tcp-2026-12-01T22-29-31Z');
    expect(files).toEqual([`${base}-bandwidth.svg`, `${base}-bandwidth.png`, `${base}-round-trips.svg`, `${base}-round-trips.png`]);
    for (const f of files.filter((f) => f.endsWith('.svg'))) expect(fs.readFileSync(f, 'utf8').startsWith('<svg')).toBe(true);
    for (const f of files.filter((f) => f.endsWith('.png'))) {
      const png = fs.readFileSync(f);
      expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      expect(png.length).toBeGreaterThan(10_000);
    }
  });

  test('next to the results file by default; png: false writes SVG only', async () => {
    const dir = fs.mkdtempSync(path.join(work, 'beside-'));
    const copy = path.join(dir, path.basename(RATE));
    fs.copyFileSync(RATE, copy);
    expect(await writePlots(copy, { png: false })).toEqual([path.join(dir, 'tcp-rate-2026-12-01T22-29-45Z-medians.svg')]);
    expect(fs.readdirSync(dir).sort()).toEqual(['tcp-rate-2026-12-01T22-29-45Z-medians.svg', path.basename(copy)].sort());
  });

  test('a file that is not JSON: an Error naming the file', async () => {
    const bad = path.join(work, 'tcp-2026-01-01T00-00-00Z.json');
    fs.writeFileSync(bad, '{ "medians": ');
    await expect(writePlots(bad)).rejects.toThrow(`${bad}: not valid JSON`);
  });
});

describe('records whose medians are figures of their own', () => {
  test('bench:tcp rate part: messages/s per scenario, ratio targets and absolute goals as marks', async () => {
    const plots = await plotRecord(load(RATE), RATE);
    expect(plots.map((p) => p.name)).toEqual(['medians']);
    const svg = plots[0].svg;
    for (const text of ['single w64', 'single w256', '16 senders w64', 'messages/s', 'UCX ucx_perftest tag_bw (UCX_TLS=tcp)']) expect(svg).toContain(`>${text}<`);
    // counter / ucx at w64 and w256 (>= 1.00), and the three goals: all missed in this run.
    expect(count(svg, 'aria-label="min target (missed)')).toBe(5);
    expect(count(svg, 'aria-label="min target (missed): mailbox put, counter (loop) &gt;= 1000000 at 16 senders w64')).toBe(1);
  });

  test('bench:ring: a panel per figure with its unit; hop and frames targets against the net.Socket ring', async () => {
    const plots = await plotRecord(ringRecord());
    expect(plots.map((p) => p.name)).toEqual(['medians']);
    const svg = plots[0].svg;
    for (const text of ['hop', 'frames/s', 'around()', 'hopP99', 'cpuFrames', 'frames per second back at rank 0', 'µs per ring.around()']) {
      expect(svg).toContain(`>${text}<`);
    }
    // The placements tell apart the rings that share a label.
    expect(svg).toContain('>rvma ring, shm (loop) (same CPU)<');
    expect(svg).toContain('>net.Socket ring (LEAP-style) (unpinned)<');
    // 2 judged rings x 2 placements: at most hop against the net.Socket and the C TCP rings and CPU
    // per frame (stop and wait, pipelined) against the net.Socket ring's; at least its frames/s.
    // around() (over its own hop time) has no level.
    expect(count(svg, 'aria-label="max target')).toBe(16);
    expect(count(svg, 'aria-label="min target')).toBe(4);
  });

  test('bench:rendezvous: bandwidth and round trips, every target on the recycling rendezvous row of its placement', async () => {
    const plots = await plotRecord(rendezvousRecord());
    expect(plots.map((p) => p.name)).toEqual(['bandwidth', 'round-trips']);
    const [bw, rtt] = plots.map((p) => p.svg);
    expect(bw).toContain('>rendezvous, recycled at cleanup (recv option) (split)<');
    // Its rows span more than 30x: a log axis, said in the title.
    expect(bw).toContain('>MiB/s of tensor bytes (log scale)<');
    expect(count(bw, 'aria-label="min target')).toBe(6);
    // Made-up times, 3 µs longer per row: on one CPU the recycling row is at 0.77 of put, split at 0.84.
    expect(count(bw, 'aria-label="min target (missed): rendezvous, recycled at cleanup (recv option) (same CPU)')).toBe(3);
    expect(count(bw, 'aria-label="min target (met): rendezvous, recycled at cleanup (recv option) (split)')).toBe(3);
    expect(rtt).toContain('>ping-pong 8 B<');
    expect(count(rtt, 'aria-label="max target (met): rendezvous, recycled at cleanup (recv option)')).toBe(2);
  });
});

describe('records it cannot read', () => {
  const record = load(TCP);
  test.each([
    ['not an object', [1, 2], 'x.json: a results record must be a JSON object, not an array'],
    ['null', null, 'x.json: a results record must be a JSON object, not null'],
    ['no medians', { ...record, medians: undefined }, 'x.json: medians is missing'],
    ['medians not numbers', { ...record, medians: { mailbox: { rtt8: '22' } } }, 'x.json: medians.mailbox.rtt8 must be a number, not string "22"'],
    ['scenarios not an array', { ...record, config: { ...record.config, scenarios: {} } }, 'x.json: config.scenarios must be an array, not an object'],
    ['a scenario without id', { ...record, config: { ...record.config, scenarios: [{ label: 'x' }] } }, 'x.json: config.scenarios[0].id is missing'],
    ['a target it cannot read', { ...record, ratios: [{ ...record.ratios[0], target: 'about 1' }] }, `x.json: ratios[0].target must read '>= x' or '<= x', not "about 1"`],
    ['no units', { ...record, units: undefined }, 'x.json: units is missing'],
  ])('%s: an Error saying what is wrong', async (_, bad, message) => {
    await expect(plotRecord(JSON.parse(JSON.stringify(bad)), 'x.json')).rejects.toThrow(message);
  });

  test('a record with nothing to plot gives no plots', async () => {
    expect(await plotRecord({ ...record, medians: {} })).toEqual([]);
    expect(await plotRecord({ ...load(RATE), medians: { counter: { w64: null } } })).toEqual([]);
  });
});
