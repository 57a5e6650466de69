// Which MemoryDirectory records a registration may replace: records a launcher seeded
// (hub.add, or the hub's constructor), and records whose process is gone. A record registered
// for another live process is as much its owner's as a local one.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { MemoryDirectory, MemoryDirectoryHub, type RegistrationLostInfo } from '../../src/directory';
import { codeOf, nodeRecord } from '../helpers/directory';

const run = randomBytes(3).toString('hex');
let counter = 0;
const uniqueId = (label: string) => `${label}-${run}-${++counter}`;



/** Another live process: a record may name it as its owner. */
const live: ChildProcess[] = [];
async function otherProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  live.push(child);
  await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child;
}
async function ended(child: ChildProcess, timeoutMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise<void>((resolve) => child.once('exit', () => resolve())),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`pid ${child.pid} did not exit within ${timeoutMs} ms`)), timeoutMs))),
  ]).finally(() => clearTimeout(timer));
}
afterEach(async () => {
  for (const child of live.splice(0)) {
    child.kill('SIGKILL');
    await ended(child);
  }
});

describe('MemoryDirectory: who may replace a record', () => {
  test('a record registered for another live process is not replaced by another incarnation', async () => {
    const owner = await otherProcess();
    const hub = new MemoryDirectoryHub();
    const [first, second] = [new MemoryDirectory(hub), new MemoryDirectory(hub)];
    const record = nodeRecord(uniqueId('shared'), { pid: owner.pid! });
    await first.register(record);

    expect(await codeOf(second.register(nodeRecord(record.nodeId, { pid: process.pid })))).toBe('ERR_RVMA_DIRECTORY_CONFLICT');
    expect(await second.resolveNode(record.nodeId)).toEqual(record);
  });

  test('once its process is gone, the record may be replaced, and the directory that registered it reports lost', async () => {
    const owner = await otherProcess();
    const hub = new MemoryDirectoryHub();
    const [first, second] = [new MemoryDirectory(hub), new MemoryDirectory(hub)];
    const record = nodeRecord(uniqueId('orphan'), { pid: owner.pid! });
    await first.register(record);
    await first.bindName(uniqueId('inbox'), 0x10000n);
    const lost: RegistrationLostInfo[] = [];
    first.on('lost', (info: RegistrationLostInfo) => lost.push(info));

    owner.kill('SIGKILL');
    await ended(owner); // reaped: its pid no longer exists
    const successor = nodeRecord(record.nodeId, { pid: process.pid });
    await second.register(successor);

    expect(await second.resolveNode(record.nodeId)).toEqual(successor);
    expect(lost).toEqual([{ nodeId: record.nodeId, incarnation: record.incarnation, takenBy: successor.incarnation, reason: 'takenOver' }]);
    expect(await codeOf(first.bindName(uniqueId('late'), 0x10000n))).toBe('ERR_RVMA_NOT_REGISTERED');
  });

  test('a record seeded by a launcher is replaced by a registration, even while its process lives', async () => {
    const seededOwner = await otherProcess();
    const added = nodeRecord(uniqueId('added'), { pid: seededOwner.pid! });
    const constructed = nodeRecord(uniqueId('constructed'), { pid: seededOwner.pid! });
    const hub = new MemoryDirectoryHub([constructed]);
    hub.add([added]);
    for (const seeded of [added, constructed]) {
      const local = nodeRecord(seeded.nodeId, { pid: process.pid });
      await new MemoryDirectory(hub).register(local);
      expect(await new MemoryDirectory(hub).resolveNode(seeded.nodeId)).toEqual(local);
    }
  });

  test('hub.add and hub.remove leave a registered record alone, whatever its pid', async () => {
    const owner = await otherProcess();
    const hub = new MemoryDirectoryHub();
    const directory = new MemoryDirectory(hub);
    const record = nodeRecord(uniqueId('registered'), { pid: owner.pid! });
    await directory.register(record);

    hub.add([nodeRecord(record.nodeId, { pid: owner.pid! })]);
    expect(await directory.resolveNode(record.nodeId)).toEqual(record);
    hub.remove(record.nodeId);
    expect(await directory.resolveNode(record.nodeId)).toEqual(record);
  });
});
