// One of the two processes as an application sets it up: a Redis directory both see, an
// endpoint over tcp labelled with its task, and its rendezvous manager.
import { Endpoint, type NodeRecord, RedisDirectory, RendezvousMgr } from '../../src';

export class Peer {
  private constructor(
    readonly directory: RedisDirectory,
    readonly endpoint: Endpoint,
    readonly mgr: RendezvousMgr,
  ) {}

  static async create(task: string, url: string, cluster: string): Promise<Peer> {
    const directory = await RedisDirectory.connect({ url, namespace: cluster });
    const endpoint = await Endpoint.create({ listen: 'tcp://127.0.0.1:0', provider: 'tcp', labels: [task], directory });
    return new Peer(directory, endpoint, RendezvousMgr.create(endpoint));
  }

  /** The directory record of the process hosting task (its node id and incarnation). */
  async other(task: string): Promise<NodeRecord> {
    const record = await this.directory.resolveLabel(task);
    if (!record) throw new Error(`no live node hosts ${task}`);
    return record;
  }

  async close(): Promise<void> {
    await this.mgr.close();
    await this.endpoint.close();
    await this.directory.close();
  }
}
