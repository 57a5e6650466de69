// A TCP proxy between rvma peers, for breaking their connections on purpose (tests, the soak's
// tcp-reset fault): every connection accepted is forwarded to the target, and can be reset
// (socket.resetAndDestroy(), both sides) on demand, after a seeded lifetime, or after a seeded
// number of bytes. It rewrites the listen address in the target's hello to its own, so a peer
// that dials the target's advertised address again (after a broken connection) comes back
// through the proxy.
import * as net from 'node:net';
import { mulberry32 } from './mulberry32';
import { parseHello, splitAddress, withAddress } from './tcp-wire';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  timer?: NodeJS.Timeout;
}

export interface ProxyOptions {
  /** Reset each connection after a lifetime drawn from [lifetimeMs / 2, 3 * lifetimeMs / 2). Default: never. */
  lifetimeMs?: number;
  /** Reset each connection once it carried towards the target a number of bytes drawn likewise. Default: never. */
  cutAfterBytes?: number;
  seed?: number;
  /** What the proxy stands for, in reports. */
  name?: string;
}

export class TcpProxy {
  /** Connections accepted so far. */
  accepted = 0;
  /** Connections reset by the proxy so far. */
  resets = 0;
  /** Bytes forwarded towards the target so far. */
  bytesUp = 0;
  /** Connections reset right after the target's hello reached the client (see cutAfterHello). */
  helloCuts = 0;
  private helloCutsLeft = 0;
  private readonly pairs = new Set<Pair>();
  private lifetimeMs: number | undefined;
  private readonly cutAfterBytes: number | undefined;
  private readonly random: () => number;
  private readonly target: { host: string; port: number };
  readonly name: string;

  private constructor(
    private readonly server: net.Server,
    target: string,
    readonly address: string,
    options: ProxyOptions,
  ) {
    this.target = splitAddress(target);
    this.lifetimeMs = options.lifetimeMs;
    this.cutAfterBytes = options.cutAfterBytes;
    this.random = mulberry32(options.seed ?? 1);
    this.name = options.name ?? target;
    server.on('connection', (client) => this.forward(client));
  }

  /** Listens on 127.0.0.1 (any port) and forwards to target ('tcp://HOST:PORT'). */
  static async start(target: string, options: ProxyOptions = {}): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const address = `tcp://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    return new TcpProxy(server, target, address, options);
  }

  /** Connections open now (both sides). */
  get live(): number {
    return this.pairs.size;
  }

  /** Resets every connection open now; later ones live as options say. */
  resetAll(): number {
    const all = [...this.pairs];
    for (const pair of all) this.reset(pair);
    return all.length;
  }

  /** Resets the oldest connection open now. */
  resetOne(): boolean {
    const first = this.pairs.values().next();
    if (first.done) return false;
    this.reset(first.value);
    return true;
  }

  /**
   * The next n connections are reset as soon as the target's hello has been handed to the
   * client's socket: the client sees the hello (its connection becomes ready), then a reset.
   */
  cutAfterHello(n: number): void {
    this.helloCutsLeft = n;
  }

  /** From now on, connections live for a drawn lifetime (undefined: until reset by hand). */
  setLifetime(ms: number | undefined): void {
    this.lifetimeMs = ms;
  }

  async close(): Promise<void> {
    this.lifetimeMs = undefined;
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
    if (this.lifetimeMs !== undefined) {
      const ms = this.lifetimeMs * (0.5 + this.random());
      pair.timer = setTimeout(() => this.reset(pair), ms);
    }
    const end = (): void => this.drop(pair);
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    let budget = this.cutAfterBytes === undefined ? Infinity : this.cutAfterBytes * (0.5 + this.random());
    client.on('data', (chunk: Buffer) => {
      this.bytesUp += chunk.length;
      budget -= chunk.length;
      // On the next turn: the chunk is forwarded first, so the cut lands anywhere in a frame.
      if (budget <= 0) setImmediate(() => this.reset(pair));
    });
    pipe(client, upstream);
    // The target's hello comes first: held until whole, then sent on with our address in it.
    let head = Buffer.alloc(0);
    const onHello = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const size = parseHello(head)?.size;
      if (size === undefined) return;
      upstream.off('data', onHello);
      const cut = this.helloCutsLeft > 0;
      if (cut) this.helloCutsLeft--;
      client.write(withAddress(head, size, this.address), () => {
        if (!cut) return;
        this.helloCuts++;
        setImmediate(() => this.reset(pair));
      });
      pipe(upstream, client);
    };
    upstream.on('data', onHello);
  }

  private reset(pair: Pair): void {
    if (!this.pairs.has(pair)) return;
    this.resets++;
    this.pairs.delete(pair);
    clearTimeout(pair.timer);
    for (const s of [pair.client, pair.upstream]) {
      if (!s.destroyed) {
        // A socket still connecting cannot send a reset: it is just destroyed.
        if (s.connecting) s.destroy();
        else s.resetAndDestroy();
      }
    }
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    clearTimeout(pair.timer);
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
