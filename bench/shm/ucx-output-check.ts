// Checks the ucx_perftest parser on output captured from ucx_perftest 1.13 (bench/shm/samples/),
// and that damaged output throws instead of giving numbers: node dist/bench/shm/ucx-output-check.js
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseUcxFinal } from '../common/ucx-output';

const SAMPLES = path.resolve(__dirname, '..', '..', '..', 'bench', 'shm', 'samples');
const sample = (name: string): string => fs.readFileSync(path.join(SAMPLES, name), 'utf8');

const bw = parseUcxFinal(sample('ucx-tag-bw.txt'), ['# iterations', 'bandwidth (MB/s) overall']);
assert.equal(bw['# iterations'], 2000); // the Final line, not the [thread 0] progress lines
assert.equal(bw['bandwidth (MB/s) overall'], 862.36);
assert.equal(bw['bandwidth (MB/s) average'], 2710.54);
assert.equal(bw['overhead (usec) 50.0%ile'], 101.97);
assert.equal(bw['message rate (msg/s) overall'], 862);

const lat = parseUcxFinal(sample('ucx-tag-lat.txt'), ['# iterations', 'latency (usec) 50.0%ile']);
assert.equal(lat['# iterations'], 100000);
assert.equal(lat['latency (usec) 50.0%ile'], 0.165);
assert.equal(lat['latency (usec) overall'], 0.503);

const text = sample('ucx-tag-lat.txt');
const damaged: Record<string, string> = {
  'no Final line': text.replace('Final:', '[thread 0]'),
  'two Final lines': `${text}${text.split('\n').find((l) => l.startsWith('Final:'))}\n`,
  'a missing value': text.replace(/ 1989000\n/, '\n'),
  'a value that is not a number': text.replace('0.165', '0.1x5'),
  'no heading': text.replace('# iterations', 'iterations  '),
  'a renamed group': text.replace('latency (usec)', 'latency (nsec)'),
};
for (const [why, output] of Object.entries(damaged)) {
  assert.throws(() => parseUcxFinal(output, ['latency (usec) 50.0%ile']), /cannot read ucx_perftest's output/, why);
}
console.log(`ucx_perftest parser: 2 samples read, ${Object.keys(damaged).length} damaged outputs refused`);
