// Route choice from directory records: loopback in-process, shm:// for a same-host record, a
// published rdma:// address for an endpoint that runs verbs, else the tcp:// address, else the
// node id; addresses pass through.
import { hostname } from 'node:os';
import { MemoryDirectory, MemoryDirectoryHub, type NodeRecord } from '../../src';
import { hostIdentity } from '../../src/mailbox/host-identity';
import { Resolver, type RoutePolicy, routeOf } from '../../src/mailbox/resolver';

const TCP_ONLY: RoutePolicy = { loopback: false, rdma: false, shm: false };
const VERBS: RoutePolicy = { loopback: false, rdma: true, shm: false };
const AUTO_RDMA: RoutePolicy = { loopback: true, rdma: true, shm: true };
const AUTO: RoutePolicy = { loopback: true, rdma: false, shm: true };

/** local: this process; sameHost: another process of this host (its host identity). */
function record(addresses: Record<string, string>, local = false, sameHost = local): NodeRecord {
  return {
    nodeId: 'peer',
    incarnation: '00000000000000ab',
    addresses,
    host: local ? hostname() : 'elsewhere',
    hostId: sameHost ? hostIdentity() : 'another-boot/net:[1]',
    pid: local ? process.pid : 1,
    capabilities: [],
    labels: ['/job:w/replica:0/task:0'],
    startTime: 0,
  };
}

describe('routeOf', () => {
  test.each<[string, Record<string, string>, RoutePolicy, boolean, string]>([
    ['rdma address, endpoint runs verbs', { rdma: 'rdma://10.0.0.1:7000' }, VERBS, false, 'rdma://10.0.0.1:7000'],
    ['rdma address, endpoint without verbs', { rdma: 'rdma://10.0.0.1:7000' }, TCP_ONLY, false, 'peer'],
    ['tcp address, endpoint runs verbs', { tcp: 'tcp://10.0.0.1:7000' }, VERBS, false, 'tcp://10.0.0.1:7000'],
    ['tcp address, tcp endpoint', { tcp: 'tcp://10.0.0.1:7000' }, TCP_ONLY, false, 'tcp://10.0.0.1:7000'],
    ['both addresses, endpoint runs verbs', { tcp: 'tcp://h:1', rdma: 'rdma://10.0.0.1:2' }, VERBS, false, 'rdma://10.0.0.1:2'],
    ['both addresses, tcp endpoint', { tcp: 'tcp://h:1', rdma: 'rdma://10.0.0.1:2' }, TCP_ONLY, false, 'tcp://h:1'],
    ['no address', {}, VERBS, false, 'peer'],
    ['in this process, loopback first', { rdma: 'rdma://10.0.0.1:7000' }, AUTO_RDMA, true, 'peer'],
    ['in this process, provider verbs', { rdma: 'rdma://10.0.0.1:7000' }, VERBS, true, 'rdma://10.0.0.1:7000'],
    ['in this process, loopback before shm', { shm: 'shm://a', tcp: 'tcp://h:1' }, AUTO, true, 'peer'],
  ])('%s', (_, addresses, policy, local, peer) => {
    expect(routeOf(record(addresses, local), policy)).toEqual({ peer, incarnation: 0xabn });
  });

  test.each<[string, Record<string, string>, RoutePolicy, boolean, string]>([
    ['same host, shm endpoint', { shm: 'shm://a', tcp: 'tcp://h:1' }, AUTO, true, 'shm://a'],
    ['same host, shm before rdma', { shm: 'shm://a', rdma: 'rdma://10.0.0.1:2' }, AUTO_RDMA, true, 'shm://a'],
    ['same host, endpoint without shm', { shm: 'shm://a', tcp: 'tcp://h:1' }, VERBS, true, 'tcp://h:1'],
    ['another host with an shm address', { shm: 'shm://a', tcp: 'tcp://h:1' }, AUTO, false, 'tcp://h:1'],
  ])('%s', (_, addresses, policy, sameHost, peer) => {
    expect(hostIdentity()).toEqual(expect.any(String));
    expect(routeOf(record(addresses, false, sameHost), policy)).toEqual({ peer, incarnation: 0xabn });
  });
});

describe('Resolver', () => {
  test('a label resolves through the directory to the rdma address, and is cached', async () => {
    const directory = new MemoryDirectory(new MemoryDirectoryHub([record({ rdma: 'rdma://10.0.0.1:7000' })]));
    const resolver = new Resolver(directory, VERBS);
    expect(await resolver.route('/job:w/replica:0/task:0')).toEqual({ peer: 'rdma://10.0.0.1:7000', incarnation: 0xabn });
    expect(resolver.route('/job:w/replica:0/task:0')).toEqual({ peer: 'rdma://10.0.0.1:7000', incarnation: 0xabn });
  });

  test.each(['rdma://10.0.0.9:1', 'tcp://h:1', 'shm://name'])('%s passes through without asking the directory', (address) => {
    const directory = new MemoryDirectory(new MemoryDirectoryHub());
    directory.resolveNode = () => Promise.reject(new Error('asked'));
    expect(new Resolver(directory, VERBS).route(address)).toEqual({ peer: address });
  });
});
