// Sender side of the protocol: peers' requests for the tensors sent here, served.
// A request waits for the local send, then gets the content put straight into its mailbox (its
// cached meta matched) or a meta response, and the content after its re-request. A request its
// receiver gives up gives the tensor back to the step.
import { crc32 } from 'node:zlib';
import { RvmaError } from '../base/errors';
import { invalid } from '../base/validate';
import { type TensorMeta, encodeContent, metaOf, sameMeta } from '../tensor/codec';
import { type Tensor } from '../tensor/tensor';
import type { ManagerContext } from './context';
import { type NormalKey, normalKey } from './key';
import { type ErrorStatus, Kind, type MetaDataResponse, type TensorReRequest, type TensorRequest } from './messages';
import type { PushSender } from './push-sender';
import { tensorOf } from './receive-pool';
import type { Received } from './rendezvous';
import { type Serving, ServingTable } from './serving';

/** Cancels remembered whose request has not arrived yet (it may come after its cancel). */
const EARLY_CANCELS_KEPT = 4096;

export class Sender {
  /** The peers' requests being served (see serving.ts). */
  private readonly serving = new ServingTable();
  private readonly earlyCancels = new Set<string>();

  constructor(
    private readonly ctx: ManagerContext,
    private readonly pushes: PushSender,
  ) {}

  /** Wait for the local send, then answer with content or meta. */
  serve(m: TensorRequest): void {
    const { ctx } = this;
    const id = `${m.from}/${m.requestIndex}`;
    let normal: NormalKey;
    try {
      normal = normalKey(m.key);
      const { parsed } = normal;
      if (!ctx.tasks.has(parsed.srcTask)) throw invalid('serve', `this endpoint does not host ${parsed.srcTask}`);
      if (parsed.srcIncarnation !== ctx.endpoint.incarnation) {
        throw new RvmaError('ERR_RVMA_PEER_LOST', `the key names incarnation ${parsed.srcIncarnation}, this node is ${ctx.endpoint.incarnation}`);
      }
    } catch (error) {
      return this.replyError(m.from, m.requestIndex, error as Error, false);
    }
    if (ctx.steps.wasCleaned(BigInt(m.stepId))) {
      return this.replyError(m.from, m.requestIndex, new RvmaError('ERR_RVMA_ABORTED', `step ${m.stepId} was cleaned up`), false);
    }
    const key = normal.key; // the sender wrote its keys so: match in that form
    const offer = m.pushVaddr !== 0n && m.cachedMeta ? () => this.pushes.accept(m.from, key, m.pushVaddr, m.cachedMeta!) : undefined;
    // Its receiver gave up before the request got here.
    if (this.earlyCancels.delete(id)) return offer?.();
    const stepId = BigInt(m.stepId);
    // A receiver has one recv of a key per step at a time: an earlier request of it was given up
    // (its cancel is still on the way). A request index used again (a receiver that restarted
    // under the same node id) supersedes the same way. Withdrawn before the step is looked up:
    // a step only that request held goes with it.
    const earlier = this.serving.ofRecv(m.from, stepId, key);
    if (earlier) this.withdraw(earlier, false);
    if (this.serving.get(id)) this.withdraw(id, false);
    if (this.serving.heldBy(m.from) >= ctx.options.maxRequestsPerPeer) {
      // Refused, not parked: what a peer can make this node hold (and the steps its requests
      // name) stays bounded, whoever it is. Nothing of anyone else's changes.
      ctx.counters.refused++;
      const why = `${m.from} already has ${ctx.options.maxRequestsPerPeer} requests waiting here (maxRequestsPerPeer)`;
      return this.replyError(m.from, m.requestIndex, new RvmaError('ERR_RVMA_OVERFLOW', why), false);
    }
    const rendezvous = ctx.steps.of(stepId, true);
    const serving: Serving = { from: m.from, stepId, key, rendezvous };
    serving.parked = (error, item) => {
      serving.parked = undefined;
      if (error) {
        this.forget(id);
        return this.replyError(m.from, m.requestIndex, error, true);
      }
      this.respond(id, serving, m, item!);
    };
    this.serving.add(id, serving);
    rendezvous.recvLocal(key, serving.parked);
    offer?.(); // after this request took its own step's tensor
  }

  private respond(id: string, serving: Serving, m: TensorRequest, item: Received): void {
    const { options } = this.ctx;
    const content = item.isDead ? new Uint8Array(0) : encodeContent(item.tensor);
    const meta = metaOf(item.tensor, item.isDead, content);
    if (meta.isDead || meta.byteSize === 0) {
      this.forget(id);
      return this.replyMeta(m, meta, null);
    }
    // A validating sender always answers with meta: its checksum must travel.
    if (!options.validate && m.dataVaddr !== 0n && sameMeta(m.cachedMeta ?? undefined, meta)) {
      this.forget(id);
      this.ctx.counters.directPuts++;
      return void this.putContent(m.from, m.requestIndex, serving, item, m.dataVaddr, content);
    }
    // The receiver must reallocate first: keep a copy, since the caller may reuse its tensor
    // once its send is matched (the direct path above reads the caller's memory in place).
    serving.clone = Uint8Array.from(content);
    serving.item = { tensor: cloneTensor(item.tensor, serving.clone, meta), isDead: false };
    this.replyMeta(m, meta, options.validate ? crc32(serving.clone) : null);
  }

  async serveReRequest(m: TensorReRequest): Promise<void> {
    const id = `${m.from}/${m.requestIndex}`;
    const serving = this.serving.get(id);
    if (!serving?.clone) {
      return this.replyError(m.from, m.requestIndex, new RvmaError('ERR_RVMA_PROTOCOL', 'no content is held for that request'), false);
    }
    this.forget(id);
    this.ctx.counters.clonePuts++;
    await this.putContent(m.from, m.requestIndex, serving, serving.item!, m.dataVaddr, serving.clone);
  }

  private async putContent(to: string, requestIndex: number, serving: Serving, item: Received, vaddr: bigint, content: Uint8Array): Promise<void> {
    const { ctx } = this;
    ctx.options.beforeContentPut?.(serving.key, content);
    try {
      await ctx.endpoint.put(to, vaddr, content, { timeout: ctx.options.sendTimeoutMs });
      ctx.counters.bytesSent += content.byteLength;
    } catch (error) {
      // The receiver gave up and closed its mailbox: the tensor is still this step's to give.
      if (error instanceof RvmaError && error.code === 'ERR_RVMA_NO_MAILBOX' && serving.rendezvous.restore(serving.key, item)) {
        ctx.counters.withdrawn++;
      }
      this.replyError(to, requestIndex, error as Error, true);
    }
  }

  /**
   * A request its receiver gave up (told, or implied by a newer request of the same recv).
   * Parked: it leaves the table. Answered with meta: the tensor goes back to the step.
   * Unknown (`told`): remembered, since the request may arrive after its cancel.
   */
  withdraw(id: string, told: boolean): void {
    const s = this.serving.get(id);
    if (!s) {
      if (!told) return;
      this.earlyCancels.add(id);
      if (this.earlyCancels.size > EARLY_CANCELS_KEPT) this.earlyCancels.delete(this.earlyCancels.values().next().value!);
      return;
    }
    this.forget(id);
    this.ctx.counters.withdrawn++;
    if (s.parked) s.rendezvous.cancelLocal(s.key, s.parked);
    else if (s.item) s.rendezvous.restore(s.key, s.item);
  }

  private forget(id: string): void {
    const s = this.serving.delete(id);
    // A step only peers' requests made holds nothing of the application's: once the last of
    // them is gone (served, withdrawn, failed, or its peer lost), so is the step.
    if (s && !this.serving.inStep(s.stepId)) this.ctx.steps.requestsGone(s.stepId);
  }

  private replyMeta(m: TensorRequest, meta: TensorMeta, checksum: number | null): void {
    const message: MetaDataResponse = { kind: Kind.MetaDataResponse, ...this.ctx.from(), requestIndex: m.requestIndex, meta, checksum };
    this.ctx.channel.send(m.from, message).catch(() => {
      // Never told, the receiver cannot ask for the copy: the tensor goes back to its step.
      const id = `${m.from}/${m.requestIndex}`;
      const s = this.serving.get(id);
      this.forget(id);
      if (s?.item) s.rendezvous.restore(s.key, s.item);
    });
  }

  /**
   * held: the answer of a request this node held, so bounded by maxRequestsPerPeer already; it
   * always goes. Otherwise (a refusal, a malformed or stale request) a peer could provoke any
   * number: the channel bounds them while they wait to be accepted (see control.ts).
   */
  private replyError(to: string, requestIndex: number, error: Error, held: boolean): void {
    const code = error instanceof RvmaError ? error.code : 'ERR_RVMA_ABORTED';
    const message: ErrorStatus = { kind: Kind.ErrorStatus, ...this.ctx.from(), requestIndex, code, message: error.message };
    this.ctx.channel.send(to, message, !held).catch(() => {}); // the receiver is gone or its own timeout fires
  }

  /** The step aborted: parked requests were answered with the error by their callbacks; held clones just go. */
  stepAborted(step: bigint): void {
    for (const [id, s] of this.serving.entries()) if (s.stepId === step && !s.parked) this.forget(id);
  }

  peerLost(nodeId: string): void {
    for (const [id, s] of this.serving.ofPeer(nodeId)) {
      this.forget(id);
      if (s.parked) s.rendezvous.cancelLocal(s.key, s.parked);
    }
  }

  /** Whether a request being served belongs to the step. */
  busyIn(step: bigint): boolean {
    return this.serving.inStep(step);
  }

  /** Requests held now (parked, or holding a copy for the re-request); of one node if given. */
  held(nodeId?: string): number {
    return nodeId === undefined ? this.serving.size : this.serving.heldBy(nodeId);
  }
}

/** The tensor over the sender's clone of its content: what goes back if the receiver gives up. */
function cloneTensor(tensor: Tensor, clone: Uint8Array, meta: TensorMeta): Tensor {
  return tensor.dtype === 'string' ? tensor : tensorOf(meta, clone);
}
