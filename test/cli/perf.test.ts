// `rvma perf` between two processes: a server (--server --once) and a client on its address,
// over tcp and over shm. Every test and size is reported once, with its numbers, and the server
// confirmed every put (the client fails otherwise). A client with no server fails typed, and a
// server ends on Ctrl-C.
import { CliProcess, rvma } from '../helpers/cli';
import { Endpoint } from '../../src';
import { uniqueNodeId } from '../helpers/endpoints';

jest.setTimeout(120_000);

interface Report {
  server: { nodeId: string; pid: number };
  results: { test: string; size: number; iterations: number; minUs?: number; medianUs?: number; p99Us?: number; mibPerSecond?: number; putsPerSecond?: number }[];
}

describe.each([
  ['tcp', 'tcp://127.0.0.1:0'],
  ['shm', `shm://${uniqueNodeId('perf')}`],
])('rvma perf over %s', (provider, listen) => {
  test('every test and size, counted by the server; the server ends after its client with --once', async () => {
    const server = new CliProcess(['perf', '--server', '--once', '--provider', provider, '--listen', listen]);
    try {
      const line = await server.line('the server listening', (l) => l.includes('listening at'), 30_000);
      const address = /listening at (\S+)/.exec(line)![1];
      const result = await rvma(['perf', address, '--provider', provider, '--json', '-s', '8,4k,256k', '-n', '200', '-w', '20', '-O', '8']);
      expect([result.status, result.stderr]).toEqual([0, '']);
      const report = JSON.parse(result.stdout) as Report;
      expect(report.results.map((r) => `${r.test} ${r.size} ${r.iterations}`)).toEqual(
        ['lat', 'bw', 'rate', 'raw'].flatMap((t) => [8, 4096, 262144].map((s) => `${t} ${s} 200`)),
      );
      for (const r of report.results) {
        if (r.test === 'lat') {
          expect(r.minUs).toBeGreaterThan(0);
          expect(r.minUs!).toBeLessThanOrEqual(r.medianUs!);
          expect(r.medianUs!).toBeLessThanOrEqual(r.p99Us!);
        } else if (r.test === 'rate') {
          expect(r.putsPerSecond).toBeGreaterThan(0);
        } else {
          expect(r.mibPerSecond).toBeGreaterThan(0);
        }
      }
      // --once: the server ends by itself once its client said goodbye.
      expect(await server.exited(15_000)).toBe(0);
      expect(server.stderr).toBe('');
    } finally {
      await server.stop('SIGKILL');
    }
  });
});

test('rvma perf: the table names every test; no server is a typed failure; a server ends on Ctrl-C', async () => {
  const server = new CliProcess(['perf', '--server', '--listen', 'tcp://127.0.0.1:0']);
  try {
    const address = /listening at (\S+)/.exec(await server.line('the server listening', (l) => l.includes('listening at'), 30_000))![1];
    const table = await rvma(['perf', address, '-t', 'lat,bw', '-s', '64', '-n', '50', '-w', '5']);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^lat\s+64\s+50\s+[\d.]+\s+[\d.]+\s+[\d.]+/m);
    expect(table.stdout).toMatch(/^bw\s+64\s+50\s+[\d.]+$/m);
    // The server keeps serving: a second client.
    expect((await rvma(['perf', address, '-t', 'rate', '-s', '8', '-n', '100', '-w', '0', '--json'])).status).toBe(0);
    expect(await server.stop('SIGINT')).toBe(0);
  } finally {
    await server.stop('SIGKILL');
  }
  const none = await rvma(['perf', 'tcp://127.0.0.1:1', '-t', 'lat', '--timeout', '5000']);
  expect(none.status).toBe(1);
  expect(none.stderr).toMatch(/^rvma perf: ERR_RVMA_NO_PEER: /);
  // More than the server would hold for one test: refused before anything connects.
  const big = await rvma(['perf', 'tcp://127.0.0.1:1', '-t', 'bw', '-s', '1g']);
  expect(big.status).toBe(1);
  expect(big.stderr).toMatch(/^rvma perf: ERR_RVMA_INVALID_ARGUMENT: rvma perf: bw of 1073741824 B puts .* needs \d+ bytes at the server/);
  const bad = await rvma(['perf', 'tcp://127.0.0.1:1', '-t', 'nope']);
  expect([bad.status, bad.stderr]).toEqual([1, 'rvma perf: --tests: unknown test "nope" (known: lat, bw, rate, raw)\n']);
});

test('rvma perf against an endpoint that is not a perf server: its refusal, typed, in one line', async () => {
  const bare = await Endpoint.create({ nodeId: uniqueNodeId('bare'), provider: 'tcp', listen: 'tcp://127.0.0.1:0' });
  try {
    const result = await rvma(['perf', bare.address, '-t', 'lat', '-s', '8', '-n', '10', '--timeout', '10000']);
    expect(result.status).toBe(1);
    // The put's refusal and nothing else: the wait for the answer it ends is not left unhandled.
    expect(result.stderr).toMatch(/^rvma perf: ERR_RVMA_NO_MAILBOX: [^\n]*\n$/);
  } finally {
    await bare.close();
  }
});
