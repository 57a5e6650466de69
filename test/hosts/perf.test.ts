// `rvma perf` between two hosts: the server on one (--server --once, listening on its bed
// address), the client on another, over tcp; then over a lossy wire (2% of the server host's
// packets dropped), where every put still arrives exactly once.
import { CliProcess, rvma } from '../helpers/cli';
import { describeHosts } from './hosts';

jest.setTimeout(120_000);

describeHosts('rvma perf between hosts', 2, (bed) => {
  afterEach(() => bed().loss(bed().hosts[0], 0));

  test.each([0, 2])('server on one host, client on another, %i%% loss: every test reported, every put counted', async (percent) => {
    const [h0, h1] = bed().hosts;
    const server = new CliProcess(['perf', '--server', '--once', '--provider', 'tcp', '--listen', `tcp://${h0.address}:18515`], bed().prefix(h0));
    try {
      const address = /listening at (\S+)/.exec(await server.line('the server listening', (l) => l.includes('listening at'), 30_000))![1];
      expect(address).toBe(`tcp://${h0.address}:18515`);
      bed().loss(h0, percent);
      const result = await rvma(['perf', address, '--provider', 'tcp', '--json', '-s', '8,64k', '-n', '300', '-w', '30'], { prefix: bed().prefix(h1) });
      const dropped = bed().dropped(h0);
      expect([result.status, result.stderr]).toEqual([0, '']);
      const report = JSON.parse(result.stdout) as { results: { test: string; size: number; iterations: number }[] };
      expect(report.results.map((r) => `${r.test} ${r.size} ${r.iterations}`)).toEqual(['lat', 'bw', 'rate', 'raw'].flatMap((t) => [`${t} 8 300`, `${t} 65536 300`]));
      if (percent > 0) expect(dropped).toBeGreaterThan(0);
      expect(await server.exited(15_000)).toBe(0);
    } finally {
      await server.stop('SIGKILL');
    }
  });
});
