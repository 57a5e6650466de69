// A TCP proxy in front of one endpoint, for resetting connections on purpose (the tcp-reset
// fault): every accepted connection is forwarded to the target and can be reset (RST, both
// sides). The target's hello is held until whole and sent on with the proxy's own address in it,
// so a peer that dials the advertised address again after a broken connection comes back
// through the proxy. Adapted from test/helpers/tcp-proxy.ts (test/ is not compiled to dist).
import * as net from 'node:net';
import { helloLength, withAddress } from '../support/tcp-wire';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
}

export class TcpProxy {
  accepted = 0;
  resets = 0;
  private readonly pairs = new Set<Pair>();

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
    readonly address: string,
    readonly name: string,
  ) {
    server.on('connection', (client) => this.forward(client));
  }

  /** Listens on 127.0.0.1 (any port) and forwards to 127.0.0.1:targetPort. */
  static async start(name: string, targetPort: number): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const address = `tcp://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    return new TcpProxy(server, { host: '127.0.0.1', port: targetPort }, address, name);
  }

  /** Connections open now. */
  get live(): number {
    return this.pairs.size;
  }

  /** Resets every connection open now; returns how many. */
  resetAll(): number {
    const all = [...this.pairs];
    for (const pair of all) this.reset(pair);
    return all.length;
  }

  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.drop(pair);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(client: net.Socket): void {
    this.accepted++;
    client.setNoDelay(true);
    const upstream = net.connect(this.target);
    upstream.setNoDelay(true);
    const pair: Pair = { client, upstream };
    this.pairs.add(pair);
    const end = (): void => this.drop(pair);
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
    pipe(client, upstream);
    let head = Buffer.alloc(0);
    const onHello = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const size = helloLength(head);
      if (size === undefined) return;
      upstream.off('data', onHello);
      client.write(withAddress(head, size, this.address));
      pipe(upstream, client);
    };
    upstream.on('data', onHello);
  }

  private reset(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    this.resets++;
    for (const s of [pair.client, pair.upstream]) {
      if (s.destroyed) continue;
      // A socket still connecting cannot send a reset: it is just destroyed.
      if (s.connecting) s.destroy();
      else s.resetAndDestroy();
    }
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream.destroy();
  }
}

/** Forwards from's data to to, with back-pressure. */
function pipe(from: net.Socket, to: net.Socket): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.destroyed && !to.write(chunk)) from.pause();
  });
  to.on('drain', () => from.resume());
}
