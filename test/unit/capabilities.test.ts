// What the build contains: the loopback, tcp and shm providers always; rdma-core if linked.
import { Endpoint } from '../../src';

describe('Endpoint.capabilities', () => {
  test('lists loopback, says whether rdma-core was linked, and lists devices', () => {
    const caps = Endpoint.capabilities;
    expect(Array.isArray(caps.providers)).toBe(true);
    expect(caps.providers).toEqual(expect.arrayContaining(['loopback', 'tcp', 'shm']));
    expect(typeof caps.cma).toBe('boolean');
    for (const provider of caps.providers) expect(typeof provider).toBe('string');
    expect(typeof caps.rdmaCore).toBe('boolean');
    expect(Array.isArray(caps.devices)).toBe(true);
    for (const device of caps.devices) {
      expect(typeof device.name).toBe('string');
      expect(Number.isInteger(device.activePorts)).toBe(true);
      expect(device.activePorts).toBe(device.ports.filter((p) => p.state === 'ACTIVE').length);
      for (const port of device.ports) {
        expect(port.port).toBeGreaterThanOrEqual(1);
        expect([256, 512, 1024, 2048, 4096]).toContain(port.activeMtu);
        for (const gid of port.gids) expect(gid.gid).toMatch(/^([0-9a-f]{4}:){7}[0-9a-f]{4}$/);
      }
    }
    // The versions the wire decoders check (tcp_frames.h, shm_layout.h, verbs_wire.h).
    expect(caps.protocols).toEqual({ tcp: 7, shm: 8, verbs: 6 });
    // Without rdma-core no device can be enumerated.
    if (!caps.rdmaCore) expect(caps.devices).toEqual([]);
  });

  test('is the same on every read', () => {
    expect(Endpoint.capabilities).toEqual(Endpoint.capabilities);
  });
});
